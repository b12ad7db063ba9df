//! The checks' outcomes and the Markdown table they make
//! (`target/world-table.md`).

use rho_tests::CliRuntime;

use crate::EXECUTORS;
use crate::rows::Row;

/// One check on one executor.
#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Pass,
    Fail(String),
    /// Not run: the server never became ready.
    NotRun,
}

impl Outcome {
    pub(crate) fn of(result: Result<(), String>) -> Self {
        match result {
            Ok(()) => Outcome::Pass,
            Err(e) => Outcome::Fail(e),
        }
    }
}

/// The outcomes of one row on one executor.
#[derive(Clone, Debug)]
pub(crate) struct Cells {
    pub(crate) era: Option<String>,
    pub(crate) connect: Outcome,
    pub(crate) list: Outcome,
    pub(crate) call: Outcome,
    pub(crate) shell: Outcome,
    /// The tool the row calls.
    pub(crate) tool: &'static str,
}

/// The table's check columns.
#[derive(Clone, Copy)]
enum Column {
    Connect,
    List,
    Call,
    Shell,
}

impl Column {
    const ALL: [Column; 4] = [Column::Connect, Column::List, Column::Call, Column::Shell];

    fn label(self) -> &'static str {
        match self {
            Column::Connect => "connect",
            Column::List => "list = Python",
            Column::Call => "call",
            Column::Shell => "shell",
        }
    }

    fn of(self, cells: &Cells) -> &Outcome {
        match self {
            Column::Connect => &cells.connect,
            Column::List => &cells.list,
            Column::Call => &cells.call,
            Column::Shell => &cells.shell,
        }
    }
}

const LEGEND: &str = "Each cell: the thread executor / the smol executor. ✓ works, ✗ fails (see the test output), · not run (the server never became ready). *list = Python*: rho lists the same tools (and prompts and resources, where offered) as the official Python client (`mcp` 2.3.0) from the same server, and gives the model every tool but the app-only ones. *call*: one harmless call, checked for its answer (Context7 and Playwright answer with the tool's own refusal: argument validation, no browser installed). *shell*: `rho mcp shell` fed `/tools` and `/call` on a pipe shows the tools and the answer, with no WARN or ERROR line on stderr.";

/// One cell: its mark on each executor.
fn cell(outcomes: [&Outcome; 2]) -> String {
    let marks: Vec<&str> = outcomes
        .iter()
        .map(|outcome| match outcome {
            Outcome::Pass => "✓",
            Outcome::Fail(_) => "✗",
            Outcome::NotRun => "·",
        })
        .collect();
    marks.join("/")
}

fn executor_name(runtime: CliRuntime) -> &'static str {
    match runtime {
        CliRuntime::Blocking => "threads",
        CliRuntime::Smol => "smol",
    }
}

/// The Markdown table of the rows run, and every failure.
pub(crate) fn table(rows: &[(&Row, [Cells; 2])]) -> (String, Vec<String>) {
    let mut out = String::from(
        "| server | package | registry | transport | era | connect | list = Python | call | shell |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut failures = Vec::new();
    for (row, pair) in rows {
        let eras = [0, 1].map(|e| pair[e].era.clone().unwrap_or_else(|| "—".into()));
        let era = if eras[0] == eras[1] {
            eras[0].clone()
        } else {
            eras.join("/")
        };
        out.push_str(&format!(
            "| {} | `{}@{}` | {} | {} | {era} |",
            row.id,
            row.package,
            row.version,
            row.registry.label(),
            row.transport,
        ));
        for column in Column::ALL {
            let outcomes = [column.of(&pair[0]), column.of(&pair[1])];
            let mut text = cell(outcomes);
            if let Column::Call = column {
                text.push_str(&format!(" `{}`", pair[0].tool));
            }
            out.push_str(&format!(" {text} |"));
            for (runtime, outcome) in EXECUTORS.iter().zip(outcomes) {
                let Outcome::Fail(e) = outcome else {
                    continue;
                };
                failures.push(format!(
                    "{} / {} / {}: {e}",
                    row.id,
                    column.label(),
                    executor_name(*runtime)
                ));
            }
        }
        out.push('\n');
    }
    out.push('\n');
    out.push_str(LEGEND);
    out.push('\n');
    (out, failures)
}
