//! Rounds: the clock moved on ([`Engine::advance_time`]) and the tasks a round runs by
//! itself ([`Engine::tick`]): each canister's global timer once its deadline is reached,
//! then its heartbeat, as the replica's scheduler adds them at the start of a round
//! (rs/execution_environment/src/scheduler.rs, index id 9086037204: `push_front` of
//! `Heartbeat`, then of `GlobalTimer`, so the timer runs first, and only for a canister
//! whose module exports the method).
//!
//! [`Engine::advance_time`]: crate::Engine::advance_time
//! [`Engine::tick`]: crate::Engine::tick

use std::time::Duration;

use super::*;
use crate::{CanisterTask, TaskOutcome};

impl EmbeddedEngine {
    pub(super) fn advance(&mut self, by: Duration) -> Result<()> {
        let by = u64::try_from(by.as_nanos())
            .ok()
            .and_then(|ns| self.time_ns.checked_add(ns))
            .ok_or_else(|| anyhow!("advancing the clock by {by:?} passes the year 2554"))?;
        self.time_ns = by;
        Ok(())
    }

    pub(super) fn round(&mut self) -> Result<Vec<TaskOutcome>> {
        let round_time = self
            .time_ns
            .checked_add(1)
            .ok_or_else(|| anyhow!("the clock is at its end"))?;
        let mut ids: Vec<Principal> = self.canisters.keys().copied().collect();
        // Canister ids count up from the first: their order is the order of creation.
        ids.sort();
        let mut ran = Vec::new();
        for id in ids {
            for task in [CanisterTask::GlobalTimer, CanisterTask::Heartbeat] {
                if !self.due(id, task, round_time) {
                    continue;
                }
                if task == CanisterTask::GlobalTimer {
                    // One run per deadline: the timer is cleared before the task runs
                    // (`CanisterTimer::Inactive`, "The global timer is one-off", in
                    // rs/execution_environment/src/execution/call_or_task.rs), and a task
                    // that traps rolls back to that, the timer it set included.
                    self.set_timer(id, 0)?;
                }
                // Every task of the round sees the round's time.
                self.time_ns = round_time - 1;
                let api = match task {
                    CanisterTask::GlobalTimer => ApiType::GlobalTimer,
                    CanisterTask::Heartbeat => ApiType::Heartbeat,
                };
                let entry = Entry {
                    api,
                    export: task.export(),
                    method: "",
                    arg: Vec::new(),
                    part: Default::default(),
                };
                let outcome = self.execute(id, entry)?;
                ran.push(TaskOutcome {
                    canister: id,
                    task,
                    outcome,
                });
            }
        }
        self.time_ns = round_time;
        Ok(ran)
    }

    /// Whether the round at `round_time` runs `task` on canister `id`.
    fn due(&self, id: Principal, task: CanisterTask, round_time: u64) -> bool {
        let Some(c) = self.canisters.get(&id) else {
            return false;
        };
        let (Some(module), Some(live)) = (&c.module, &c.live) else {
            return false;
        };
        if !module.exports.contains(task.export()) {
            return false;
        }
        match task {
            CanisterTask::Heartbeat => true,
            CanisterTask::GlobalTimer => {
                let deadline = live.store.data().global_timer;
                deadline != 0 && round_time >= deadline
            }
        }
    }

    /// The canister's global timer, as `ic0.global_timer_set` leaves it (0: none).
    pub fn global_timer(&self, id: Principal) -> Option<u64> {
        let live = self.canisters.get(&id)?.live.as_ref()?;
        Some(live.store.data().global_timer)
    }

    fn set_timer(&mut self, id: Principal, deadline: u64) -> Result<()> {
        let live = self.canister(id)?.instance(id)?;
        live.store.data_mut().global_timer = deadline;
        Ok(())
    }
}
