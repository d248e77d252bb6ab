use super::*;
use crate::engine::embedded::memory::map_anonymous;
use crate::engine::embedded::EmbeddedEngine;
use crate::suites::Shard;

/// A fresh engine with a canister whose `add` update adds its argument byte to a counter
/// in the heap and replies with the sum.
fn counter_installed() -> (EmbeddedEngine, candid::Principal) {
    let wasm = wat::parse_str(
        r#"(module
          (import "ic0" "msg_arg_data_copy" (func $arg (param i32 i32 i32)))
          (import "ic0" "msg_reply_data_append" (func $append (param i32 i32)))
          (import "ic0" "msg_reply" (func $reply))
          (memory (export "memory") 1)
          (func (export "canister_update add")
            (call $arg (i32.const 16) (i32.const 0) (i32.const 1))
            (i32.store (i32.const 0)
              (i32.add (i32.load (i32.const 0)) (i32.load8_u (i32.const 16))))
            (call $append (i32.const 0) (i32.const 4))
            (call $reply)))"#,
    )
    .unwrap();
    let mut engine = EmbeddedEngine::default();
    let (canister, out) = engine.install(&wasm, &[]).unwrap();
    out.result.unwrap();
    (engine, canister)
}

fn add(lane: &mut Lane<'_, '_>, n: u8) -> Result<u32> {
    let canister = lane.client.canister;
    let out = lane.client.engine.update(canister, "add", &[n])?;
    let reply = out.result.map_err(|r| anyhow!("{r}"))?;
    Ok(u32::from_le_bytes(reply[..4].try_into().unwrap()))
}

/// A scenario task called `name`: from `state`, `add(n)`, then `done` with the sum.
fn add_from<'s>(
    state: State,
    name: String,
    n: u8,
    done: impl FnOnce(&mut Lane<'_, 's>, u32) + Send + 's,
) -> Task<'s> {
    Task::new(Kind::Scenario, name, move |lane| {
        lane.restore(&state)?;
        let sum = add(lane, n)?;
        done(lane, sum);
        Ok(())
    })
}

/// A chain of two steps, each spawning readers of the state it left, and a join after
/// every reader: results, units and their order of dependence, whatever the jobs.
#[test]
fn spawned_tasks_start_from_shared_states_and_joins_wait_for_all() {
    for jobs in [1, 2, 3] {
        let (mut engine, canister) = counter_installed();
        let mut client = BenchClient::attach(&mut engine, canister);
        let start = snapshot(client.engine, canister).unwrap();
        let rec = Recorder::new(jobs);
        let seen: Mutex<Vec<(u8, u32)>> = Mutex::new(Vec::new());
        let joined: Mutex<Option<usize>> = Mutex::new(None);
        let seen = &seen;
        let joined = &joined;
        let join = Join::new(
            4,
            Task::new(Kind::Other, "after every reader", move |_| {
                *joined.lock().unwrap() = Some(seen.lock().unwrap().len());
                Ok(())
            }),
        );
        let start_ref = &start;
        let chain = Task::new(Kind::Fill, "fill to 1", move |lane| {
            lane.restore(start_ref)?;
            for step in 1..=2u8 {
                if step > 1 {
                    lane.step(Kind::Fill, format!("fill to {step}"));
                }
                add(lane, 1)?;
                let state = lane.snapshot()?;
                for reader in 0..2u8 {
                    let (state, join) = (state.clone(), join.clone());
                    let name = format!("read {step}.{reader}");
                    lane.spawn(add_from(state, name, 10, move |lane, sum| {
                        seen.lock().unwrap().push((step, sum));
                        join.arrive(&lane.ctl);
                    }));
                }
            }
            Ok(())
        })
        .priority(10);
        let exec = Exec {
            jobs,
            shard: Shard::WHOLE,
            profile: false,
        };
        run(
            &mut client,
            &start,
            &exec,
            &rec,
            &mut |_| {},
            vec![chain],
            None,
        )
        .unwrap();
        let mut seen = seen.lock().unwrap().clone();
        seen.sort();
        // Each reader saw the state of its step: 1 + 10, 2 + 10.
        assert_eq!(
            seen,
            vec![(1, 11), (1, 11), (2, 12), (2, 12)],
            "jobs {jobs}"
        );
        assert_eq!(*joined.lock().unwrap(), Some(4), "jobs {jobs}");
        let log = rec.log();
        let named = |name: &str| {
            log.units
                .iter()
                .find(|u| u.name == name)
                .unwrap_or_else(|| panic!("no unit {name}"))
        };
        let (one, two) = (named("fill to 1"), named("fill to 2"));
        assert_eq!(two.after, vec![one.id]);
        assert_eq!(named("read 1.0").after, vec![one.id]);
        assert_eq!(named("read 2.1").after, vec![two.id]);
        let mut after = named("after every reader").after.clone();
        after.sort();
        let mut readers: Vec<usize> = log
            .units
            .iter()
            .filter(|u| u.name.starts_with("read "))
            .map(|u| u.id)
            .collect();
        readers.sort();
        assert_eq!(after, readers);
        assert!(log.units.iter().all(|u| u.lane < jobs.max(1)));
    }
}

#[test]
fn an_error_or_a_panic_stops_the_graph_and_is_returned() {
    for (jobs, panics) in [(1, false), (2, false), (2, true)] {
        let (mut engine, canister) = counter_installed();
        let mut client = BenchClient::attach(&mut engine, canister);
        let start = snapshot(client.engine, canister).unwrap();
        let rec = Recorder::new(jobs);
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let ran = &ran;
        let tasks: Vec<Task<'_>> = (0..20)
            .map(|i| {
                Task::new(Kind::Scenario, format!("task {i}"), move |_| {
                    ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i == 0 {
                        if panics {
                            panic!("task 0 fell over");
                        }
                        return Err(anyhow!("task 0 failed"));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    Ok(())
                })
                .priority(20 - i)
            })
            .collect();
        let exec = Exec {
            jobs,
            shard: Shard::WHOLE,
            profile: false,
        };
        let err = run(&mut client, &start, &exec, &rec, &mut |_| {}, tasks, None).unwrap_err();
        let text = err.to_string();
        if panics {
            assert!(
                text.contains("task \"task 0\" panicked: task 0 fell over"),
                "{text}"
            );
        } else {
            assert_eq!(text, "task 0 failed");
        }
        // The failure stopped the workers before their next task (not checked after a
        // panic, whose report with a backtrace takes a while as the other worker goes on).
        let ran = ran.load(std::sync::atomic::Ordering::Relaxed);
        assert!(panics || ran <= jobs + 1, "jobs {jobs}: {ran}");
    }
}

/// Runs the test `name` of this binary alone, on the harness's main thread, in a new
/// process: a test that forks must not copy other tests' threads in the middle of
/// their work (a lock one of them held would stay held in the copy).
fn alone_in_a_process(name: &str) -> bool {
    const ALONE: &str = "ICBENCH_TEST_ALONE";
    if std::env::var_os(ALONE).is_some() {
        return false;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--test-threads=1"])
        .env(ALONE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    true
}

/// Tasks of the counter canister: top-level task `i` adds `i`, keeps the state and
/// spawns a task that adds 100 to it; each hands in (i, sum), and task `fail` fails.
/// With `started` (a count every process sees), task 1 waits until another task has
/// started: another process runs it, since task 1 holds its own.
fn counter_tasks<'s>(
    start: &'s State,
    sums: &'s Mutex<Vec<(u8, u32)>>,
    fail: Option<u8>,
    started: Option<&'s std::sync::atomic::AtomicU32>,
) -> Vec<Task<'s>> {
    (1..=6u8)
        .map(|i| {
            Task::new(Kind::Fill, format!("add {i}"), move |lane| {
                if let Some(started) = started {
                    started.fetch_add(1, Ordering::SeqCst);
                    let waited = std::time::Instant::now();
                    while i == 1 && started.load(Ordering::SeqCst) < 2 {
                        if waited.elapsed().as_secs() > 30 {
                            return Err(anyhow!("no other process took a task"));
                        }
                        std::thread::sleep(std::time::Duration::from_millis(1));
                    }
                }
                if Some(i) == fail {
                    return Err(anyhow!("task {i} failed on purpose"));
                }
                lane.restore(start)?;
                add(lane, i)?;
                let state = lane.snapshot()?;
                let name = format!("then 100 after {i}");
                lane.spawn(add_from(state, name, 100, move |_, sum| {
                    sums.lock().unwrap().push((i, sum));
                }));
                Ok(())
            })
        })
        .collect()
}

/// What [`counter_in_processes`] gives: the tasks' (i, sum), instructions, units.
type CounterRun = (Vec<(u8, u32)>, u64, Vec<crate::report::work::Unit>);

/// Runs [`counter_tasks`] on `jobs` workers as processes: what they handed in, the
/// instructions executed, the units recorded (or the error).
fn counter_in_processes(jobs: usize, fail: Option<u8>) -> Result<CounterRun> {
    let (mut engine, canister) = counter_installed();
    let mut client = BenchClient::attach(&mut engine, canister);
    let start = snapshot(client.engine, canister)?;
    let rec = Recorder::new(jobs);
    let sums: Mutex<Vec<(u8, u32)>> = Mutex::new(Vec::new());
    let export = || Ok(serde_json::to_value(&*sums.lock().unwrap())?);
    let import = |value: serde_json::Value| {
        let theirs: Vec<(u8, u32)> = serde_json::from_value(value)?;
        sums.lock().unwrap().extend(theirs);
        Ok(())
    };
    let carry = Carry {
        export: &export,
        import: &import,
    };
    let exec = Exec {
        jobs,
        shard: Shard::WHOLE,
        profile: false,
    };
    // A count in memory the processes share.
    let shared = if jobs > 1 {
        // One zeroed u32, unmapped below.
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        Some(map_anonymous(4, prot, libc::MAP_SHARED).expect("a shared page"))
    } else {
        None
    };
    // SAFETY: the mapping holds one zeroed u32 and outlives the tasks.
    let started = shared.map(|base| unsafe { &*(base as *const std::sync::atomic::AtomicU32) });
    let tasks = counter_tasks(&start, &sums, fail, started);
    let ran = run(
        &mut client,
        &start,
        &exec,
        &rec,
        &mut |_| {},
        tasks,
        Some(&carry),
    );
    if let Some(base) = shared {
        // SAFETY: the mapping made above; no task runs any more.
        unsafe { libc::munmap(base.cast(), 4) };
    }
    ran?;
    let mut sums = sums.into_inner().unwrap();
    sums.sort();
    Ok((sums, client.executed_instructions, rec.log().units))
}

/// Worker processes: every task runs once, in one process, with what it spawned; their
/// results, instructions and units of work come back as one process's would (the
/// heap's write log works in the copy: the sums and counts are those of one worker).
#[test]
fn worker_processes_hand_back_what_their_tasks_did() {
    if alone_in_a_process(
        "suites::pool::graph::tests::worker_processes_hand_back_what_their_tasks_did",
    ) {
        return;
    }
    let (one, executed_one, _) = counter_in_processes(1, None).unwrap();
    let expected: Vec<(u8, u32)> = (1..=6).map(|i| (i, i as u32 + 100)).collect();
    assert_eq!(one, expected);
    for jobs in [2, 3] {
        let (sums, executed, units) = counter_in_processes(jobs, None).unwrap();
        assert_eq!(sums, expected, "jobs {jobs}");
        assert_eq!(executed, executed_one, "jobs {jobs}");
        // 6 tasks and the 6 they spawned, each once, numbered in order, each after
        // the task that spawned it.
        let ids: Vec<usize> = units.iter().map(|u| u.id).collect();
        assert_eq!(ids, (0..units.len()).collect::<Vec<_>>(), "jobs {jobs}");
        for i in 1..=6 {
            let named = |n: String| units.iter().filter(|u| u.name == n).collect::<Vec<_>>();
            let (parent, child) = (
                named(format!("add {i}")),
                named(format!("then 100 after {i}")),
            );
            assert_eq!((parent.len(), child.len()), (1, 1), "jobs {jobs}, task {i}");
            assert_eq!(child[0].after, vec![parent[0].id], "jobs {jobs}, task {i}");
            assert_eq!(child[0].lane, parent[0].lane, "jobs {jobs}, task {i}");
        }
        let add_1 = units.iter().find(|u| u.name == "add 1").unwrap();
        assert!(
            units.iter().any(|u| u.lane != add_1.lane),
            "jobs {jobs}: one process ran everything"
        );
    }
    // A task that fails fails the run, whichever process ran it.
    for jobs in [1, 2] {
        let err = counter_in_processes(jobs, Some(4)).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "task 4 failed on purpose",
            "jobs {jobs}"
        );
    }
}

/// The shared flags: a task goes to the first worker that takes it; a worker takes a new
/// one only while it has no more tasks of its own than any other; after a failure nobody
/// takes any.
#[test]
fn claims_go_to_the_first_taker_and_to_the_least_loaded() {
    let claims = crate::suites::pool::process::Claims::new(3, 2).unwrap();
    assert!(claims.take(0, 1));
    assert!(!claims.take(0, 0));
    assert!(claims.take(0, 1), "a worker's own claim stays its own");
    claims.set_own(0, 5);
    claims.set_own(1, 2);
    assert!(!claims.may_claim(0));
    assert!(claims.may_claim(1));
    claims.set_own(1, 5);
    assert!(claims.may_claim(0) && claims.may_claim(1));
    claims.fail();
    assert!(!claims.take(1, 0) && !claims.take(2, 1));
}
