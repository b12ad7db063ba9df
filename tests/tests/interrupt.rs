//! `RuntimeOptions::interrupt`: once set, startup stops waiting at once,
//! whatever the budgets, and every server still starting is closed with
//! its whole process group (the `rho` CLI sets it from SIGINT, SIGTERM and
//! SIGHUP). The servers are `lingering.js never`: they never answer
//! `initialize`, ignore SIGTERM and the end of their input, and keep a
//! `sleep` grandchild.

use std::path::Path;
use std::time::{Duration, Instant};

use rho_host::Cancel;
use rho_proto_core::runtime::status::{FailureKind, ServerStatus};
use rho_tests::both_executors;
use rho_tests::matrix::TestRuntime;
use rho_tests::*;

fn lingering(id: &str, dir: &Path) -> String {
    let script = tests_dir().join("servers/fixtures/lingering.js");
    format!(
        "{}startup_timeout_secs = 60\n",
        node_server(id, &script, &["never", &dir.display().to_string()])
    )
}

fn interrupt_ends_startup_at_once_and_leaves_nothing_running<R: TestRuntime>() {
    let (a, b) = (scratch_dir("interrupt-a"), scratch_dir("interrupt-b"));
    let config = parse_config(&format!("{}{}", lingering("a", &a), lingering("b", &b)));
    let interrupt = Cancel::new();
    let mut options = options_with(&[]);
    options.interrupt = Some(interrupt.clone());
    let pids = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let pids: Vec<u32> = [&a, &b]
                .iter()
                .flat_map(|dir| {
                    [
                        read_pidfile_within(&dir.join("server.pid")),
                        read_pidfile_within(&dir.join("sleep.pid")),
                    ]
                })
                .collect();
            interrupt.cancel();
            (pids, Instant::now())
        });
        let runtime = R::start(&config, options);
        let (pids, interrupted_at) = waiter.join().expect("waiter");
        // At once: 3 s is room for a debug build on a loaded machine,
        // and far under the 60 s budget the wait would sit out.
        assert!(
            interrupted_at.elapsed() < Duration::from_secs(3),
            "startup went on {:?} after the interrupt",
            interrupted_at.elapsed()
        );
        for id in ["a", "b"] {
            match runtime.server(id).map(|s| s.status) {
                Some(ServerStatus::Failed {
                    error,
                    kind: FailureKind::Interrupted,
                }) => {
                    assert!(error.contains("startup was interrupted"), "{error}")
                }
                other => panic!("server `{id}`: {other:?}"),
            }
        }
        runtime.shutdown();
        pids
    });
    for pid in pids {
        assert!(
            wait_gone(pid),
            "process {pid} outlived the interrupted startup"
        );
    }
    let _ = std::fs::remove_dir_all(a);
    let _ = std::fs::remove_dir_all(b);
}

/// [`read_pidfile`] with a longer wait: two node servers starting on a
/// busy machine may take more than its 5 s.
fn read_pidfile_within(path: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(20);
    while !path.exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    read_pidfile(path)
}

both_executors!(interrupt_ends_startup_at_once_and_leaves_nothing_running);
