//! A row through the hosts' own facade, `rho_host::Host`, on one
//! executor: connect, the lists, the call.

use std::sync::atomic::{AtomicBool, Ordering};

use rho_host::Cancel;
use std::time::{Duration, Instant};

use rho_host::CallOptions;
use rho_proto_core::runtime::status::ServerStatus;
use rho_tests::matrix::TestRuntime;
use rho_tests::{options_with, parse_config};

use crate::python::Lists;
use crate::rows::{Ctx, Row};
use crate::table::Outcome;

/// How long the harness lets the call run before abandoning it (a hang);
/// above rho's own call budget.
const CALL_BOUND: Duration = Duration::from_secs(40);

/// What rho listed, names sorted.
#[derive(Clone, Debug, Default)]
pub(crate) struct RhoLists {
    /// Every tool the server listed.
    tools: Vec<String>,
    /// The server's tools rho gives the model, by the server's names.
    exported: Vec<String>,
    prompts: Option<Vec<String>>,
    resources: Option<Vec<String>>,
}

/// One row's run on one executor.
pub(crate) struct HostRun {
    /// The protocol version rho speaks with the server.
    pub(crate) era: Option<String>,
    pub(crate) connect: Outcome,
    /// `None` when the server never became ready.
    pub(crate) lists: Option<RhoLists>,
    pub(crate) call: Outcome,
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

/// Starts the row's server alone on executor `R`, reads what rho listed
/// and makes the call.
pub(crate) fn host_row<R: TestRuntime>(row: &Row, ctx: &Ctx) -> HostRun {
    let (launch, call) = (row.setup)(ctx);
    let mut options = options_with(&[]);
    options.workspace = Some(ctx.dir.to_path_buf());
    let host = R::start(&parse_config(&launch.config(row.id)), options);
    let view = host.server(row.id);
    let (report, tools) = match view {
        Some(view) => match view.status {
            ServerStatus::Ready(report) => (report, view.tools),
            ServerStatus::Failed { error, .. } => return not_ready(host, error),
            other => return not_ready(host, format!("{other:?}")),
        },
        None => return not_ready(host, "not in the host".into()),
    };
    let catalog = &report.catalog;
    let lists = RhoLists {
        tools: sorted(tools.into_iter().map(|t| t.name).collect()),
        exported: sorted(
            host.current_tools()
                .into_iter()
                .filter(|t| t.server == row.id)
                .map(|t| t.tool)
                .collect(),
        ),
        prompts: catalog.prompts.offered.then(|| {
            sorted(
                catalog
                    .prompts
                    .items
                    .iter()
                    .map(|p| p.name.clone())
                    .collect(),
            )
        }),
        resources: catalog.resources.offered.then(|| {
            sorted(
                catalog
                    .resources
                    .items
                    .iter()
                    .map(|r| r.uri.clone())
                    .collect(),
            )
        }),
    };
    let listing_errors = catalog.errors();
    let connect = if listing_errors.is_empty() {
        Ok(())
    } else {
        Err(format!("ready, but a listing failed: {listing_errors:?}"))
    };
    let (result, took) = bounded(|cancel| {
        host.call(
            (row.id, call.tool),
            call.arguments.clone(),
            CallOptions::new().cancel(cancel),
        )
    });
    let called = match result {
        Err(e) if took >= CALL_BOUND => Err(format!(
            "hung: still running after {CALL_BOUND:?}, abandoned by the harness ({e})"
        )),
        Err(e) => Err(format!("{e} (after {} ms)", took.as_millis())),
        Ok(result) => {
            let rendered = host.render_result(row.id, &result);
            call.expect.check(rendered.is_error, &rendered.model_text)
        }
    };
    host.shutdown();
    HostRun {
        era: Some(report.protocol_version),
        connect: Outcome::of(connect),
        lists: Some(lists),
        call: Outcome::of(called),
    }
}

fn not_ready(host: rho_host::Host, why: String) -> HostRun {
    host.shutdown();
    HostRun {
        era: None,
        connect: Outcome::Fail(format!("not ready: {why}")),
        lists: None,
        call: Outcome::NotRun,
    }
}

/// Runs `call` with a cancel flag set after [`CALL_BOUND`], the guard
/// against a hang; what it gave and how long it took.
fn bounded<T>(call: impl FnOnce(&Cancel) -> T) -> (T, Duration) {
    let cancel = Cancel::new();
    let done = AtomicBool::new(false);
    let started = Instant::now();
    let out = std::thread::scope(|scope| {
        scope.spawn(|| {
            while started.elapsed() < CALL_BOUND && !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20));
            }
            cancel.cancel();
        });
        let out = call(&cancel);
        done.store(true, Ordering::Relaxed);
        out
    });
    (out, started.elapsed())
}

/// rho's lists against the Python client's: the same tools, prompts and
/// resources, and every tool given to the model but the app-only ones.
pub(crate) fn check_lists(rho: &RhoLists, python: &Lists) -> Result<(), String> {
    let differs = |what: &str, rho: &dyn std::fmt::Debug, python: &dyn std::fmt::Debug| {
        Err(format!(
            "rho listed the {what} {rho:?}, the Python client {python:?}"
        ))
    };
    if rho.tools != python.tools {
        return differs("tools", &rho.tools, &python.tools);
    }
    if rho.prompts != python.prompts {
        return differs("prompts", &rho.prompts, &python.prompts);
    }
    if rho.resources != python.resources {
        return differs("resources", &rho.resources, &python.resources);
    }
    let for_model = python.for_model();
    if rho.exported == for_model {
        return Ok(());
    }
    if !python.app_only.is_empty() && rho.exported == python.tools {
        return Err(format!(
            "exports the app-only tools {:?} to the model",
            python.app_only
        ));
    }
    Err(format!(
        "rho gives the model {:?}, the model-visible tools are {for_model:?}",
        rho.exported
    ))
}
