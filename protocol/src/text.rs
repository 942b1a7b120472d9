//! Names on the wire (scene and material names) are shown to people: characters that
//! change how the text around them reads without being seen — control characters,
//! bidirectional overrides and isolates (U+202E turns "gpj.exe" into "exe.jpg"),
//! zero-width and other invisible characters — are refused by the server when it loads a
//! scene and by clients when a server sends them.

/// What `c` is when it may not appear in a name, else `None`.
pub fn hidden_char(c: char) -> Option<&'static str> {
    match c {
        c if c.is_control() => Some("a control character"),
        '\u{061C}'
        | '\u{200E}'
        | '\u{200F}'
        | '\u{202A}'..='\u{202E}'
        | '\u{2066}'..='\u{2069}' => Some("a bidirectional control character"),
        '\u{00AD}'
        | '\u{034F}'
        | '\u{115F}'
        | '\u{1160}'
        | '\u{17B4}'
        | '\u{17B5}'
        | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200D}'
        | '\u{2028}'
        | '\u{2029}'
        | '\u{2060}'..='\u{2064}'
        | '\u{206A}'..='\u{206F}'
        | '\u{3164}'
        | '\u{FEFF}'
        | '\u{FFA0}'
        | '\u{FFF9}'..='\u{FFFB}'
        | '\u{E0000}'..='\u{E007F}' => Some("an invisible character"),
        _ => None,
    }
}

/// Checks a name: no hidden character ([`hidden_char`]), at most `max` characters. The
/// error says which character (as U+XXXX) and where.
pub fn check_name(name: &str, max: usize) -> Result<(), String> {
    if let Some((at, c, what)) = name
        .chars()
        .enumerate()
        .find_map(|(i, c)| hidden_char(c).map(|what| (i, c, what)))
    {
        return Err(format!(
            "must not contain {what}: U+{:04X} at character {at}",
            u32::from(c)
        ));
    }
    if name.chars().count() > max {
        return Err(format!("must be at most {max} characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_and_invisible_characters_are_named_and_ordinary_text_passes() {
        assert_eq!(
            check_name("tumour\u{202E}gpj", 200),
            Err("must not contain a bidirectional control character: U+202E at character 6".into())
        );
        assert!(check_name("zero\u{200B}width", 200)
            .unwrap_err()
            .contains("invisible character: U+200B"));
        assert!(check_name("bell\u{7}", 200)
            .unwrap_err()
            .contains("control character"));
        for fine in ["Leber (Zirrhose) — 5 kPa", "肝臓", "bunny 🐰", "كبد"] {
            assert_eq!(check_name(fine, 200), Ok(()), "{fine}");
        }
        assert!(check_name(&"x".repeat(201), 200).is_err());
    }
}
