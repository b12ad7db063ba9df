//! How requests leave: their ids, their bytes (a stateless era's `_meta`
//! spliced in as rendered once), the pending table and its deadlines, and
//! the stateless requests kept to be sent again.

use super::*;

impl Session {
    /// The request a call is waiting on now (a call keeps its [`CallId`]
    /// when its request goes again under a new id).
    pub(super) fn request_of(&self, call: CallId) -> Option<u64> {
        let of_call = |p: &Pending| matches!(p.purpose, Purpose::CallTool(c) | Purpose::Feature(c) if c == call);
        if self.pending.get(&call.0).is_some_and(of_call) {
            return Some(call.0);
        }
        self.pending
            .iter()
            .find(|(_, p)| of_call(p))
            .map(|(&n, _)| n)
    }

    /// Sends a stateless request again under a new JSON-RPC id, keeping
    /// its purpose, deadline and budget (the multi round-trip retry and the
    /// -32022 retry go through here; so does its first send). `params`
    /// replaces what it sent; the era's `_meta` is merged in afresh. An
    /// untimed request (listen) stays untimed, a paused one (a question
    /// of its call is still open) stays paused, to resume under the new id
    /// with what was left, and a listen request's subscription moves to
    /// the new id. Returns the new id.
    pub(super) fn reissue(&mut self, pending: Pending, resend: Resend) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let no_meta = era::Meta::default();
        let meta = self.meta.as_ref().unwrap_or(&no_meta);
        let mut bytes = Vec::with_capacity(REQUEST_CAPACITY);
        match resend.rounds.as_deref() {
            // A multi round-trip retry: the round's answers and the
            // server's state, exactly as it sent it.
            Some(rounds) => {
                let params = era::with_meta(resend.params.to_value(), meta.map());
                jsonrpc::write_request(
                    &mut bytes,
                    ClientRequestId(id),
                    resend.method,
                    Some(&rounds.retry_params(&params)),
                )
            }
            // The era's `_meta` spliced in as rendered once.
            None => resend.params.write(meta, &mut bytes, id, resend.method),
        }
        self.push_transmit(bytes, TransmitKind::Request(ClientRequestId(id)));
        if pending.armed() {
            self.deadlines.insert((pending.deadline, id));
        }
        // The subscription follows its request to the new id: changes
        // come tagged with it.
        if let (Purpose::Listen, Some(subscription)) = (&pending.purpose, &mut self.subscription) {
            subscription.opened(id);
        }
        self.pending.insert(
            id,
            Pending {
                resend: Some(Box::new(resend)),
                ..pending
            },
        );
        id
    }

    /// Sends a request of a stateless era: kept with its params, to be
    /// sent again as the era's retries need.
    pub(super) fn send_stateless(
        &mut self,
        purpose: Purpose,
        method: &'static str,
        params: era::Params,
        deadline: Instant,
        budget: Duration,
    ) -> u64 {
        let pending = Pending::new(purpose, deadline, budget);
        let resend = Resend {
            method,
            params,
            version_retried: false,
            stream_retried: false,
            header_retried: false,
            rounds: None,
        };
        self.reissue(pending, resend)
    }

    pub(super) fn send_request<P: Serialize + ?Sized>(
        &mut self,
        purpose: Purpose,
        method: &'static str,
        params: Option<&P>,
        deadline: Instant,
        budget: Duration,
    ) -> u64 {
        if self.meta.is_some() {
            let params = era::Params::Value(params.and_then(|p| serde_json::to_value(p).ok()));
            return self.send_stateless(purpose, method, params, deadline, budget);
        }
        let id = self.next_id;
        self.next_id += 1;
        // Room for a small request and its newline in one allocation.
        let mut bytes = Vec::with_capacity(REQUEST_CAPACITY);
        jsonrpc::write_request(&mut bytes, ClientRequestId(id), method, params);
        let kind = match purpose {
            Purpose::Initialize | Purpose::Reinitialize => {
                TransmitKind::Initialize(ClientRequestId(id))
            }
            _ => TransmitKind::Request(ClientRequestId(id)),
        };
        self.push_transmit(bytes, kind);
        let pending = Pending::new(purpose, deadline, budget);
        if pending.timed() {
            self.deadlines.insert((deadline, id));
        }
        self.pending.insert(id, pending);
        id
    }

    pub(super) fn send_notification(&mut self, method: &str, params: Option<&Value>) {
        let bytes = jsonrpc::notification_bytes(method, params);
        let kind = if method == "notifications/initialized" {
            TransmitKind::Initialized
        } else {
            TransmitKind::Notification
        };
        self.push_transmit(bytes, kind);
    }

    pub(super) fn push_transmit(&mut self, mut bytes: Vec<u8>, kind: TransmitKind) {
        if self.options.framing == Framing::Lines {
            bytes.push(b'\n');
        }
        self.transmits.push_back(Transmit { bytes, kind });
    }
}
