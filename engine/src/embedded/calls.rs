//! A call tree: an update message and every message its calls lead to, run to the end
//! before the update's answer is known, as the replica runs them over rounds. A call goes
//! to a canister on this engine (a Motoko `await` on the canister's own async function is a
//! call to itself); its callee runs the method as an update with the caller's id, and its
//! answer runs the caller's reply or reject callback in the caller's call context. A call
//! context answers its caller when a part replies or rejects, and with the replica's
//! "did not reply" reject when its last outstanding callback ended without an answer. The
//! messages run in the order they were sent, first in, first out.

use std::collections::VecDeque;

use anyhow::{bail, Result};
use candid::Principal;

use super::execute::{reject, Entry, Part};
use super::system_api::{ApiType, Closure, OutCall, Response};
use super::EmbeddedEngine;
use crate::counter_reads::CounterRead;
use crate::{CallOutcome, ErrorCode, MessageReport, Reject};

/// More messages than any call tree of a benchmark needs: a canister that calls itself
/// forever stops here instead of running until the engine's memory is gone.
const MAX_MESSAGES: usize = 100_000;

/// A message of the last call tree, as it ran.
#[derive(Clone, Debug)]
pub struct TreeMessage {
    pub canister: Principal,
    pub kind: TreeKind,
    pub report: MessageReport,
    /// The trap or reject that ended it, if it did not run to its end.
    pub trap: Option<Reject>,
    /// Its `ic0.performance_counter` reads, when the engine records them.
    pub reads: Vec<CounterRead>,
}

/// What a message of a call tree ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeKind {
    /// A method, for the ingress message or a call.
    Method(String),
    ReplyCallback,
    RejectCallback,
    Cleanup,
}

/// How a part of a call context ended: its answer, the calls it sent, or its trap.
pub(super) struct PartEnd {
    pub answer: Option<Response>,
    pub sent: Vec<OutCall>,
    pub trap: Option<Reject>,
}

/// Who waits for a call context's answer.
#[derive(Clone, Copy)]
enum Origin {
    Ingress,
    Call {
        context: usize,
        on_reply: Closure,
        on_reject: Closure,
        on_cleanup: Option<Closure>,
    },
}

struct Context {
    canister: Principal,
    origin: Origin,
    answered: bool,
    outstanding: usize,
}

enum Task {
    Request {
        context: usize,
        caller: Principal,
        method: String,
        arg: Vec<u8>,
    },
    Response {
        context: usize,
        answer: Result<Vec<u8>, Reject>,
        closure: Closure,
        cleanup: Option<Closure>,
    },
}

#[derive(Default)]
struct Tree {
    contexts: Vec<Context>,
    queue: VecDeque<Task>,
    ingress: Option<Result<Vec<u8>, Reject>>,
}

impl Tree {
    /// Sends `answer` to whoever waits for `context`.
    fn answer(&mut self, context: usize, answer: Result<Vec<u8>, Reject>) {
        let c = &mut self.contexts[context];
        if c.answered {
            return;
        }
        c.answered = true;
        match c.origin {
            Origin::Ingress => self.ingress = Some(answer),
            Origin::Call {
                context,
                on_reply,
                on_reject,
                on_cleanup,
            } => self.queue.push_back(Task::Response {
                context,
                closure: if answer.is_ok() { on_reply } else { on_reject },
                answer,
                cleanup: on_cleanup,
            }),
        }
    }

    /// Takes in how a part of `context` ended.
    fn settle(&mut self, context: usize, end: PartEnd) {
        let canister = self.contexts[context].canister;
        if let Some(trap) = end.trap {
            if self.contexts[context].outstanding == 0 {
                self.answer(context, Err(trap));
            }
            return;
        }
        if let Some(response) = end.answer {
            self.answer(context, answered(canister, response));
        }
        for call in end.sent {
            self.contexts[context].outstanding += 1;
            let callee_context = self.contexts.len();
            let callee = Principal::try_from_slice(&call.callee).unwrap_or(Principal::anonymous());
            self.contexts.push(Context {
                canister: callee,
                origin: Origin::Call {
                    context,
                    on_reply: call.on_reply,
                    on_reject: call.on_reject,
                    on_cleanup: call.on_cleanup,
                },
                answered: false,
                outstanding: 0,
            });
            self.queue.push_back(Task::Request {
                context: callee_context,
                caller: canister,
                method: call.method,
                arg: call.arg,
            });
        }
        if self.contexts[context].outstanding == 0 {
            let did_not_reply = reject(
                ErrorCode::CanisterDidNotReply,
                format!("Canister {canister} did not produce a response"),
            );
            self.answer(context, Err(did_not_reply));
        }
    }
}

/// A part's reply or reject as its caller receives it.
fn answered(canister: Principal, response: Response) -> Result<Vec<u8>, Reject> {
    match response {
        Response::Reply(bytes) => Ok(bytes),
        Response::Reject(text) => Err(Reject {
            code: ErrorCode::CanisterRejectedMessage.reject_code(),
            error_code: ErrorCode::CanisterRejectedMessage,
            message: if text.is_empty() {
                format!("Canister {canister} rejected the message")
            } else {
                text
            },
        }),
    }
}

impl EmbeddedEngine {
    /// An update call of `method` and the call tree it starts; the outcome is the first
    /// message's report with the ingress answer. An update that sends no call is one
    /// message, as before calls were delivered.
    pub(super) fn update_tree(
        &mut self,
        id: Principal,
        method: &str,
        arg: &[u8],
    ) -> Result<CallOutcome> {
        let mut first = self.call(id, ApiType::Update, method, arg)?;
        let end = self.take_part_end(&first);
        self.tree = vec![TreeMessage {
            canister: id,
            kind: TreeKind::Method(method.to_string()),
            report: first.report.clone(),
            trap: end.trap.clone(),
            reads: self.last_counter_reads.clone(),
        }];
        if end.sent.is_empty() {
            return Ok(first);
        }
        let mut tree = Tree::default();
        tree.contexts.push(Context {
            canister: id,
            origin: Origin::Ingress,
            answered: false,
            outstanding: 0,
        });
        tree.settle(0, end);
        while let Some(task) = tree.queue.pop_front() {
            if self.tree.len() >= MAX_MESSAGES {
                bail!("the call tree of {method} ran {MAX_MESSAGES} messages without ending");
            }
            match task {
                Task::Request {
                    context,
                    caller,
                    method,
                    arg,
                } => self.run_request(&mut tree, context, caller, &method, arg)?,
                Task::Response {
                    context,
                    answer,
                    closure,
                    cleanup,
                } => self.run_response(&mut tree, context, answer, closure, cleanup)?,
            }
        }
        first.result = tree.ingress.unwrap_or_else(|| {
            Err(reject(
                ErrorCode::CanisterDidNotReply,
                format!("Canister {id} did not produce a response"),
            ))
        });
        Ok(first)
    }

    /// The messages of the last update's call tree, in the order they ran.
    pub fn last_call_tree(&self) -> &[TreeMessage] {
        &self.tree
    }

    fn take_part_end(&mut self, out: &CallOutcome) -> PartEnd {
        let sent = std::mem::take(&mut self.sent);
        let answer = self.answer.take();
        let trap = match (&out.result, self.trapped) {
            (Err(r), true) => Some(r.clone()),
            _ => None,
        };
        PartEnd { answer, sent, trap }
    }

    fn run_request(
        &mut self,
        tree: &mut Tree,
        context: usize,
        caller: Principal,
        method: &str,
        arg: Vec<u8>,
    ) -> Result<()> {
        let callee = tree.contexts[context].canister;
        if !self.canisters.contains_key(&callee) {
            if let Some(reply) = self.replies.get(&(callee, method.to_string())) {
                tree.answer(context, Ok(reply.clone()));
                return Ok(());
            }
            let missing = reject(
                ErrorCode::CanisterNotFound,
                format!("Canister {callee} not found"),
            );
            tree.answer(context, Err(missing));
            return Ok(());
        }
        let export = match self.method_export(callee, method, ApiType::Update)? {
            Ok(export) => export,
            Err(r) => {
                tree.answer(context, Err(r));
                return Ok(());
            }
        };
        let api = if export.starts_with("canister_update ") {
            ApiType::Update
        } else {
            ApiType::ReplicatedQuery
        };
        let entry = Entry {
            api,
            export: &export,
            method,
            arg,
            part: Part {
                caller: Some(caller.as_slice().to_vec()),
                ..Part::default()
            },
        };
        let out = self.execute(callee, entry)?;
        self.record(tree, context, TreeKind::Method(method.to_string()), &out);
        Ok(())
    }

    fn run_response(
        &mut self,
        tree: &mut Tree,
        context: usize,
        answer: Result<Vec<u8>, Reject>,
        closure: Closure,
        cleanup: Option<Closure>,
    ) -> Result<()> {
        tree.contexts[context].outstanding -= 1;
        let canister = tree.contexts[context].canister;
        let replied = tree.contexts[context].answered;
        let (api, kind, arg, rejected) = match answer {
            Ok(bytes) => (ApiType::ReplyCallback, TreeKind::ReplyCallback, bytes, None),
            Err(r) => (
                ApiType::RejectCallback,
                TreeKind::RejectCallback,
                Vec::new(),
                Some((r.code as u32, r.message)),
            ),
        };
        let callback = Part {
            caller: None,
            callback: Some(closure),
            reject: rejected,
            replied,
        };
        let out = self.run_closure(canister, api, arg, callback)?;
        let trapped = self.trapped;
        self.record(tree, context, kind, &out);
        if let (true, Some(cleanup)) = (trapped, cleanup) {
            let part = Part {
                callback: Some(cleanup),
                replied,
                ..Part::default()
            };
            let out = self.run_closure(canister, ApiType::Cleanup, Vec::new(), part)?;
            // A cleanup's own trap changes nothing more.
            let end = self.take_part_end(&out);
            self.tree.push(TreeMessage {
                canister,
                kind: TreeKind::Cleanup,
                report: out.report,
                trap: end.trap,
                reads: self.last_counter_reads.clone(),
            });
        }
        Ok(())
    }

    fn run_closure(
        &mut self,
        canister: Principal,
        api: ApiType,
        arg: Vec<u8>,
        part: Part,
    ) -> Result<CallOutcome> {
        let export = match api {
            ApiType::Cleanup => "[cleanup]",
            ApiType::RejectCallback => "[reject callback]",
            _ => "[reply callback]",
        };
        let entry = Entry {
            api,
            export,
            method: "",
            arg,
            part,
        };
        self.execute(canister, entry)
    }

    /// Records a part of `context` that ran, and takes in how it ended.
    fn record(&mut self, tree: &mut Tree, context: usize, kind: TreeKind, out: &CallOutcome) {
        let end = self.take_part_end(out);
        self.tree.push(TreeMessage {
            canister: tree.contexts[context].canister,
            kind,
            report: out.report.clone(),
            trap: end.trap.clone(),
            reads: self.last_counter_reads.clone(),
        });
        tree.settle(context, end);
    }
}
