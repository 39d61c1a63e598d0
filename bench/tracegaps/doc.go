// Command tracegaps reads Go execution traces of rackstream instances (the
// bench driver's -trace-dir, or GET /debug/pprof/trace?seconds=N with
// http.pprof=true) and says when every task of an instance waited for
// records at once, and how long a task that had work waited for a CPU.
//
// A task goroutine is idle when it is blocked in its run loop's select
// with no batch queued. When all of an instance's tasks are idle together
// for tens of milliseconds while a load is running, the instance is not
// behind: records are not reaching it (the consumer's next fetch has not
// come back). When the gaps start at the same moments in every instance,
// the cause is shared, the broker. A task's runnable latency (from being
// woken to running) is the instance's own wait for the two cores.
//
//	go run ./bench/tracegaps [-min 20ms] trace...
//
// docs/lab/freshness.md ("What the tasks wait for at 1 s") has what it
// showed. The goroutines and the idle wait are recognised by their stack
// frames (-worker, -idle): if the runtime's function names change, the
// command finds no task and says so rather than printing zeros.
package main
