//! A server of another protocol version is refused at the hello, with an error naming
//! both versions, before anything else is decoded.

use futures_util::SinkExt;
use palpa_client::palpa_protocol as wire;
use palpa_client::{Client, ClientError};
use tokio_tungstenite::tungstenite::Message;

#[tokio::test]
async fn a_server_of_protocol_version_2_is_refused_by_name() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/ws", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut socket = tokio_tungstenite::accept_async(tcp).await.unwrap();
        let hello = wire::ServerMessage::Hello(wire::ServerHello {
            protocol_version: 2,
            scene_name: "old server".into(),
            frame_rate_hz: 30.0,
            model_rate_hz: 200.0,
            haptic_rate_hz: 1000.0,
            units: wire::Units::si(),
            control_allowed: false,
        });
        socket
            .send(Message::Binary(wire::encode_server(&hello).into()))
            .await
            .unwrap();
        // A version-2 scene init would follow; the client must not get that far.
        let _ = socket.send(Message::Binary(vec![1, 0, 0, 0].into())).await;
    });
    let error = match Client::connect(&url).await {
        Err(e) => e,
        Ok(_) => panic!("a version-2 server was accepted"),
    };
    let text = error.to_string();
    assert!(matches!(error, ClientError::Protocol(_)), "{text}");
    assert!(
        text.contains("protocol version 2") && text.contains(&wire::PROTOCOL_VERSION.to_string()),
        "{text}"
    );
    server.await.unwrap();
}
