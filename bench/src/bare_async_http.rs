//! The bare client over Streamable HTTP on smol's reactor: the limit of an
//! HTTP client that waits as rho-smol does.
//!
//! The bare HTTP client (`workers::bare_http`) blocks in `read` on its
//! socket, a thread per call. A client on smol instead waits for its
//! socket in async-io's reactor, and every wait costs what polling's epoll
//! backend does there (`epoll_pwait`, the re-arming of the socket's
//! one-shot interest, of the reactor's notifier and of its timer), which
//! a blocking `read` does not. This client pays that and as little else
//! as it can: its HTTP/1.1 is written here (requests formatted by hand,
//! the response head parsed by `httparse`, the body read by its length or
//! its chunks), each keep-alive connection carries one exchange at a
//! time, a read is attempted only once the reactor says the socket is
//! readable, and the body is parsed as `bare_http` parses it. 16 in
//! flight means 16 tasks on one thread, each with its own connection, as
//! rho-smol runs its exchanges on one executor.
//!
//! Plain `http://` to an IP address only: the benchmark's servers are on
//! loopback.

use std::cell::RefCell;
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::rc::Rc;
use std::time::Instant;

use serde_json::Value;
use smol::{Async, LocalExecutor};

use crate::util::Cpu;
use crate::workers::{
    INITIALIZED, Measured, WorkerSpec, answer_len, call_line, initialize_line, messages_of,
};

/// The most a head may take, as rho's own limit.
const MAX_HEAD: usize = 64 * 1024;
/// One read's size.
const READ_SIZE: usize = 16 * 1024;

/// Runs the spec against its URL.
pub fn run(spec: &WorkerSpec) -> Result<(Vec<Measured>, usize), String> {
    let url = spec.url.as_deref().ok_or("no url")?;
    let target = Target::parse(url)?;
    let executor = LocalExecutor::new();
    smol::block_on(executor.run(session(&executor, spec, &target)))
}

/// Where the requests go.
struct Target {
    addr: SocketAddr,
    /// `host:port`, for the `Host` header.
    authority: String,
    path: String,
}

impl Target {
    fn parse(url: &str) -> Result<Self, String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("bare-async speaks plain http:// only, not `{url}`"))?;
        let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
        let addr = authority
            .parse()
            .map_err(|e| format!("`{authority}` is not an IP address and port: {e}"))?;
        Ok(Self {
            addr,
            authority: authority.to_owned(),
            path: if path.is_empty() { "/" } else { path }.to_owned(),
        })
    }

    /// A POST of `body`, with the session's headers once there is one.
    fn post(&self, body: &str, session: Option<&str>) -> Vec<u8> {
        let mut request = Vec::with_capacity(256 + body.len());
        let _ = write!(
            request,
            "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n",
            self.path, self.authority
        );
        if let Some(session) = session {
            let _ = write!(
                request,
                "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            );
        }
        let _ = write!(request, "Content-Length: {}\r\n\r\n{body}", body.len());
        request
    }
}

/// The handshake, the warm-up and each concurrency level, then the
/// session's DELETE.
async fn session<'a>(
    executor: &LocalExecutor<'a>,
    spec: &'a WorkerSpec,
    target: &'a Target,
) -> Result<(Vec<Measured>, usize), String> {
    let mut conn = Conn::open(target.addr).await?;
    let answer = conn
        .exchange(&target.post(&initialize_line(0), None))
        .await?;
    let session: Rc<str> = answer.session.ok_or("no Mcp-Session-Id")?.into();
    conn.exchange(&target.post(INITIALIZED, Some(&session)))
        .await?;
    let args: Rc<str> = spec.args.to_string().into();
    let mut next_id = 1u64;
    let mut result_len = 0;
    for _ in 0..spec.warmup {
        result_len = call(&mut conn, target, &session, &spec.tool, &args, next_id).await?;
        next_id += 1;
    }
    let idle = Rc::new(RefCell::new(vec![conn]));
    let mut out = Vec::new();
    for &inflight in &spec.inflight {
        let per = spec.n.div_ceil(inflight);
        let cpu = Cpu::now();
        let wall = Instant::now();
        let lanes: Vec<_> = (0..inflight)
            .map(|lane| {
                let count = per.min(spec.n.saturating_sub(lane * per));
                let first_id = next_id + (lane * per) as u64;
                let (idle, session, args) =
                    (Rc::clone(&idle), Rc::clone(&session), Rc::clone(&args));
                executor.spawn(async move {
                    let taken = idle.borrow_mut().pop();
                    let mut conn = match taken {
                        Some(conn) => conn,
                        None => Conn::open(target.addr).await?,
                    };
                    let mut lat = Vec::with_capacity(count);
                    let mut len = 0;
                    for k in 0..count {
                        let t = Instant::now();
                        let id = first_id + k as u64;
                        len = call(&mut conn, target, &session, &spec.tool, &args, id).await?;
                        lat.push(t.elapsed().as_secs_f64() * 1e6);
                    }
                    idle.borrow_mut().push(conn);
                    Ok::<_, String>((lat, len))
                })
            })
            .collect();
        let mut lat = Vec::with_capacity(spec.n);
        for lane in lanes {
            let (times, len) = lane.await?;
            lat.extend(times);
            result_len = len;
        }
        out.push(Measured::new(
            inflight,
            wall.elapsed(),
            Cpu::now().since(cpu),
            lat,
        ));
        next_id += spec.n as u64;
    }
    let delete = format!(
        "DELETE {} HTTP/1.1\r\nHost: {}\r\nMcp-Session-Id: {session}\r\nContent-Length: 0\r\n\r\n",
        target.path, target.authority
    );
    let last = idle.borrow_mut().pop();
    if let Some(mut conn) = last {
        let _ = conn.exchange(delete.as_bytes()).await;
    }
    Ok((out, result_len))
}

/// One `tools/call`: the answer's first text block's length.
async fn call(
    conn: &mut Conn,
    target: &Target,
    session: &str,
    tool: &str,
    args: &str,
    id: u64,
) -> Result<usize, String> {
    let answer = conn
        .exchange(&target.post(&call_line(id, tool, args), Some(session)))
        .await?;
    let messages: Vec<Value> = messages_of(answer.sse, &answer.body)?;
    answer_len(&messages, id)
}

/// What an exchange brought back.
struct Answer {
    session: Option<String>,
    sse: bool,
    body: Vec<u8>,
}

/// One keep-alive connection.
struct Conn {
    io: Async<TcpStream>,
    /// What has arrived and not been consumed.
    buf: Vec<u8>,
    /// Where a read lands, zeroed once.
    scratch: Box<[u8]>,
}

impl Conn {
    async fn open(addr: SocketAddr) -> Result<Self, String> {
        let io = Async::<TcpStream>::connect(addr)
            .await
            .map_err(|e| format!("connecting to {addr}: {e}"))?;
        io.get_ref()
            .set_nodelay(true)
            .map_err(|e| format!("TCP_NODELAY: {e}"))?;
        Ok(Self {
            io,
            buf: Vec::with_capacity(READ_SIZE),
            scratch: vec![0; READ_SIZE].into_boxed_slice(),
        })
    }

    /// Writes `request` and reads its whole response.
    async fn exchange(&mut self, request: &[u8]) -> Result<Answer, String> {
        use smol::io::AsyncWriteExt as _;
        self.io
            .write_all(request)
            .await
            .map_err(|e| format!("write: {e}"))?;
        self.buf.clear();
        let head = loop {
            self.fill().await?;
            if let Some(head) = Head::parse(&self.buf)? {
                break head;
            }
            if self.buf.len() > MAX_HEAD {
                return Err("response head too large".into());
            }
        };
        if head.status >= 300 {
            return Err(format!("HTTP {}", head.status));
        }
        let body = if head.chunked {
            loop {
                if let Some(body) = dechunk(&self.buf[head.len..])? {
                    break body;
                }
                self.fill().await?;
            }
        } else {
            let end = head.len + head.length.unwrap_or(0);
            while self.buf.len() < end {
                self.fill().await?;
            }
            self.buf[head.len..end].to_vec()
        };
        Ok(Answer {
            session: head.session,
            sse: head.sse,
            body,
        })
    }

    /// Waits until the socket is readable, then appends what it holds.
    async fn fill(&mut self) -> Result<(), String> {
        loop {
            self.io.readable().await.map_err(|e| format!("wait: {e}"))?;
            match self.io.get_ref().read(&mut self.scratch) {
                Ok(0) => return Err("the server closed the connection".into()),
                Ok(n) => {
                    self.buf.extend_from_slice(&self.scratch[..n]);
                    return Ok(());
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(format!("read: {e}")),
            }
        }
    }
}

/// A parsed response head.
struct Head {
    /// Its length in bytes.
    len: usize,
    status: u16,
    length: Option<usize>,
    chunked: bool,
    sse: bool,
    session: Option<String>,
}

impl Head {
    /// The head at the start of `buf`, once it is all there.
    fn parse(buf: &[u8]) -> Result<Option<Self>, String> {
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Ok(None),
            Err(e) => return Err(format!("bad response head: {e}")),
        };
        let mut head = Self {
            len,
            status: response.code.unwrap_or(0),
            length: None,
            chunked: false,
            sse: false,
            session: None,
        };
        for h in response.headers.iter() {
            let value = std::str::from_utf8(h.value).unwrap_or_default();
            if h.name.eq_ignore_ascii_case("content-length") {
                head.length = value.trim().parse().ok();
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                head.chunked = value.to_ascii_lowercase().contains("chunked");
            } else if h.name.eq_ignore_ascii_case("content-type") {
                head.sse = value.starts_with("text/event-stream");
            } else if h.name.eq_ignore_ascii_case("mcp-session-id") {
                head.session = Some(value.to_owned());
            }
        }
        Ok(Some(head))
    }
}

/// The body of a chunked transfer once its last chunk (and the empty
/// trailer after it) has arrived; `None` while more is to come.
fn dechunk(mut data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut body = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&data[..eol]).map_err(|_| "bad chunk size")?;
        let hex = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(hex, 16).map_err(|_| format!("bad chunk size `{hex}`"))?;
        let rest = &data[eol + 2..];
        if size == 0 {
            // No trailers are expected: the empty line ends the body.
            return Ok(rest.starts_with(b"\r\n").then_some(body));
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&rest[..size]);
        data = &rest[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_body_is_whole_only_after_its_last_chunk() {
        let full = b"5\r\nhello\r\n6;x=1\r\n world\r\n0\r\n\r\n";
        assert_eq!(dechunk(full).unwrap().as_deref(), Some(&b"hello world"[..]));
        for cut in 0..full.len() {
            assert_eq!(dechunk(&full[..cut]).unwrap(), None, "cut at {cut}");
        }
        assert!(dechunk(b"zz\r\n").is_err());
    }

    #[test]
    fn a_head_is_read_once_complete_with_what_the_client_needs() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nmcp-session-id: abc\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert!(Head::parse(&head[..head.len() - 1]).unwrap().is_none());
        let parsed = Head::parse(head).unwrap().unwrap();
        assert_eq!(parsed.len, head.len());
        assert_eq!(parsed.status, 200);
        assert!(parsed.sse && parsed.chunked);
        assert_eq!(parsed.session.as_deref(), Some("abc"));
    }
}
