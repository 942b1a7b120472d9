//! CPU time of named threads, for benchmarks that measure a server's cost per message.

/// Nanoseconds on CPU so far of the threads of process `pid` (`None`: this process)
/// whose name starts with `prefix`, from `/proc/<pid>/task/*/schedstat`.
pub fn threads_cpu_ns(pid: Option<u32>, prefix: &str) -> u64 {
    let tasks = match pid {
        Some(pid) => format!("/proc/{pid}/task"),
        None => "/proc/self/task".to_owned(),
    };
    let Ok(tasks) = std::fs::read_dir(tasks) else {
        return 0;
    };
    let mut total = 0;
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.starts_with(prefix) {
            let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
            total += stat
                .split_whitespace()
                .next()
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}
