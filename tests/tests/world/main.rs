//! World rows: rho against popular MCP servers as people install them
//! from npm and PyPI (`tests/world/`, pinned; `tests/world/install`
//! installs them), beside the interop matrix's servers on each SDK.
//!
//! Each row ([`rows::ROWS`]), on both executors: connect (ready); the
//! lists (tools, and prompts and resources where offered) equal to what
//! the official Python client lists from the same server ([`python`]);
//! one harmless call ([`host`]); and `rho mcp shell` fed `/tools` and
//! `/call` on a pipe ([`shell`]). One row starts its server 5 s late, as a
//! cold `npx` does, and must still end ready in the server's era.
//!
//! Nothing reaches past loopback: a call that would reach a service goes
//! to a stub on 127.0.0.1 (Notion's API, a page to fetch; [`fixtures`]),
//! or is one the server refuses before it would (argument validation, a
//! browser that is not installed).
//!
//! The outcome is a Markdown table written to `target/world-table.md`
//! (`scripts/interop-table world` copies it into docs/testing.md); the test
//! fails listing every check that failed.

mod fixtures;
mod host;
mod python;
mod rows;
mod shell;
mod table;

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use rho_tests::matrix::{Smol, Threads};
use rho_tests::{CliRuntime, scratch_dir, tests_dir};

use crate::host::{HostRun, check_lists, host_row};
use crate::python::{Lists, python_lists};
use crate::rows::{Ctx, ROWS, Row};
use crate::shell::{ShellRun, check_shell, rho_binary, shell_row};
use crate::table::{Cells, Outcome, table};

/// The executors, in the order of each cell's two marks.
const EXECUTORS: [CliRuntime; 2] = [CliRuntime::Blocking, CliRuntime::Smol];
/// Jobs run at once from the pool (each starts one server process).
const PARALLEL_JOBS: usize = 4;

/// A finished job: which row, which executor, what it gave.
enum Done {
    Python(usize, Result<Lists, String>),
    Host(usize, CliRuntime, HostRun),
    Shell(usize, CliRuntime, ShellRun),
}

type Job<'a> = Box<dyn FnOnce() -> Done + Send + 'a>;

/// The jobs of one row: the Python client's lists, and a host run and a
/// shell run on each executor, each in a scratch directory of its own.
fn jobs_of<'a>(i: usize, stub: &'a str, context7_http: &'a str, rho: &'a Path) -> Vec<Job<'a>> {
    let row: &'static Row = &ROWS[i];
    let mut jobs: Vec<Job<'a>> = vec![Box::new(move || {
        let dir = scratch_dir(&format!("world-python-{}", row.id));
        Done::Python(i, python_lists(row, &in_dir(&dir, stub, context7_http)))
    })];
    for runtime in EXECUTORS {
        jobs.push(Box::new(move || {
            let dir = scratch_dir(&format!("world-host-{}", row.id));
            let ctx = in_dir(&dir, stub, context7_http);
            Done::Host(
                i,
                runtime,
                match runtime {
                    CliRuntime::Blocking => host_row::<Threads>(row, &ctx),
                    CliRuntime::Smol => host_row::<Smol>(row, &ctx),
                },
            )
        }));
        jobs.push(Box::new(move || {
            let dir = scratch_dir(&format!("world-shell-{}", row.id));
            let run = shell_row(rho, row, &in_dir(&dir, stub, context7_http), runtime);
            Done::Shell(i, runtime, run)
        }));
    }
    jobs
}

fn in_dir<'a>(dir: &'a Path, stub: &'a str, context7_http: &'a str) -> Ctx<'a> {
    Ctx {
        dir,
        stub,
        context7_http,
    }
}

/// Runs the jobs: the late row's each on a thread of its own at once
/// (they mostly wait), the others `PARALLEL_JOBS` at a time in table
/// order.
fn run_jobs<'a>(waiting: Vec<Job<'a>>, pooled: Vec<Job<'a>>) -> Vec<Done> {
    let queue = Mutex::new(pooled.into_iter().rev().collect::<Vec<_>>());
    let done = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for job in waiting {
            let done = &done;
            scope.spawn(move || {
                let finished = job();
                done.lock().expect("done").push(finished);
            });
        }
        for _ in 0..PARALLEL_JOBS {
            scope.spawn(|| {
                loop {
                    let Some(job) = queue.lock().expect("queue").pop() else {
                        return;
                    };
                    let finished = job();
                    done.lock().expect("done").push(finished);
                }
            });
        }
    });
    done.into_inner().expect("done")
}

/// Every world row on both executors; writes `target/world-table.md` and
/// fails listing every check that failed.
/// `WORLD_ONLY=pdf` runs only the rows whose id contains `pdf`.
#[test]
fn world_rows() {
    let started = Instant::now();
    let rho = rho_binary();
    let stub = fixtures::start_stub();
    let (_context7, context7_http) = fixtures::start_context7_http(&scratch_dir("world"));
    let only = std::env::var("WORLD_ONLY").unwrap_or_default();
    let selected: Vec<usize> = (0..ROWS.len())
        .filter(|&i| ROWS[i].id.contains(&only))
        .collect();
    let (mut waiting, mut pooled) = (Vec::new(), Vec::new());
    for &i in &selected {
        let jobs = jobs_of(i, &stub, &context7_http, &rho);
        if ROWS[i].late {
            waiting.extend(jobs);
        } else {
            pooled.extend(jobs);
        }
    }
    let mut python: Vec<Option<Result<Lists, String>>> = ROWS.iter().map(|_| None).collect();
    let mut hosts: Vec<[Option<HostRun>; 2]> = ROWS.iter().map(|_| [None, None]).collect();
    let mut shells: Vec<[Option<ShellRun>; 2]> = ROWS.iter().map(|_| [None, None]).collect();
    let slot = |runtime: CliRuntime| usize::from(runtime == EXECUTORS[1]);
    for finished in run_jobs(waiting, pooled) {
        match finished {
            Done::Python(i, lists) => python[i] = Some(lists),
            Done::Host(i, runtime, run) => hosts[i][slot(runtime)] = Some(run),
            Done::Shell(i, runtime, run) => shells[i][slot(runtime)] = Some(run),
        }
    }
    eprintln!("world: every run done at {:?}", started.elapsed());

    let mut rows = Vec::new();
    for i in selected {
        let python = python[i]
            .take()
            .unwrap_or_else(|| Err("the Python client did not run".into()));
        let pair =
            [0, 1].map(|e| cells(&ROWS[i], &python, hosts[i][e].take(), shells[i][e].take()));
        rows.push((&ROWS[i], pair));
    }
    let (table, failures) = table(&rows);
    let target = tests_dir().join("../target");
    let _ = std::fs::create_dir_all(&target);
    std::fs::write(target.join("world-table.md"), &table).expect("write the table");
    eprintln!("{table}");
    assert!(
        failures.is_empty(),
        "{} world failures (table in target/world-table.md):\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// One row's outcomes on one executor, from its runs and the Python
/// client's lists.
fn cells(
    row: &Row,
    python: &Result<Lists, String>,
    host: Option<HostRun>,
    shell: Option<ShellRun>,
) -> Cells {
    let host = host.unwrap_or(HostRun {
        era: None,
        connect: Outcome::Fail("the host run did not finish".into()),
        lists: None,
        call: Outcome::NotRun,
    });
    let list = match (&host.lists, python) {
        (None, _) => Outcome::NotRun,
        (Some(_), Err(e)) => Outcome::Fail(format!("the Python client: {e}")),
        (Some(rho), Ok(python)) => Outcome::of(check_lists(rho, python)),
    };
    let (tool, shell) = match shell {
        None => ("", Outcome::Fail("the shell run did not finish".into())),
        Some((call, Err(e))) => (call.tool, Outcome::Fail(e)),
        Some((call, Ok(output))) => {
            let empty = Lists::default();
            let python = python.as_ref().unwrap_or(&empty);
            let shown = check_shell(row, &call, python, &output);
            (call.tool, Outcome::of(shown))
        }
    };
    Cells {
        era: host.era,
        connect: host.connect,
        list,
        call: host.call,
        shell,
        tool,
    }
}
