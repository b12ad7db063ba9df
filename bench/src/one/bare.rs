//! `one-bare SERVER ARGS...`: the limit of a one-server client, in a
//! binary of its own (see `bench/README.md`): the bare JSON-lines client's
//! exchange (`initialize`, `notifications/initialized`, `tools/list`, one
//! `tools/call` of `echo`), each answer parsed into a `serde_json::Value`
//! and matched by id, on the main thread with std alone: no runtime, no
//! schema checks, no timers, no threads.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::Value;

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    if argv.is_empty() {
        eprintln!("usage: one-bare SERVER [ARGS...]");
        std::process::exit(2);
    }
    match run(&argv) {
        Ok(len) => println!("{len}"),
        Err(e) => {
            eprintln!("one-bare: {e}");
            std::process::exit(1);
        }
    }
}

fn run(argv: &[String]) -> Result<usize, String> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut send = |line: &str| -> Result<(), String> {
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .map_err(|e| format!("write: {e}"))
    };
    let mut answer = |id: u64| -> Result<Value, String> {
        let mut line = String::new();
        loop {
            line.clear();
            if stdout
                .read_line(&mut line)
                .map_err(|e| format!("read: {e}"))?
                == 0
            {
                return Err("the server closed its stdout".into());
            }
            let message: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if message.get("method").is_none() && message.get("id") == Some(&Value::from(id)) {
                return Ok(message);
            }
        }
    };
    send(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bare","version":"0.0.0"}}}"#,
    )?;
    answer(0)?;
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
    send(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#)?;
    answer(1)?;
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hello"}}}"#,
    )?;
    let result = answer(2)?;
    drop(stdin);
    let _ = child.wait();
    Ok(result
        .pointer("/result/content/0/text")
        .and_then(Value::as_str)
        .map_or(0, str::len))
}
