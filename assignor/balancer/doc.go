// Package balancer carries Rackstream's placement over Kafka's classic
// consumer-group protocol: it is the kgo.GroupBalancer that every instance
// installs, the wire formats its members exchange, and the view of the whole
// placement every member keeps.
//
// # How a rebalance runs
//
// Every member joins with protocol type "consumer" (so that kadm and Kafka's
// tools can still describe the group) and protocol name [ProtocolName]. Its
// kmsg.ConsumerMemberMetadata carries the input topics, the partitions it
// owns (cooperative rebalancing, KIP-429) and, in UserData, a
// [Subscription]: process id, query endpoint, client tags, capacity, the
// member's last plan, a checkpoint per task whose state it holds and the
// byte rates of its active tasks.
//
// The coordinator picks one member as leader. The leader decodes every
// member's metadata itself before anything else (a member whose bytes do not
// decode gets an empty assignment, one warning and a counted rejection,
// instead of failing kgo.NewConsumerBalancer and wedging the group), fetches
// the changelog end offsets to turn checkpoints into lags, takes the latest
// partition racks a background loop reads from cluster metadata (racks.go;
// never waiting for them), runs the pure
// placement of package assignor, hands each member the input partitions of
// its active tasks, and lets kgo's AdjustCooperative hold back partitions
// that must first be revoked by their current owner. While any are held
// back, every member's assignment asks it to rejoin at once: the second
// round that hands them over ends only when every member has joined it,
// and kgo restarts a revoking member's offset fetch for the tasks it gained
// (a failover's) only after that round. Each member's
// assignment UserData is an [AssignmentData]: its own standby and warmup
// tasks and the whole placement (every task's active and standbys, every
// member's process id, endpoint and tags, and the plan's quality), or, when
// the group is too large for that to fit in the broker's group-metadata
// record, a reference to the placement the leader published once to the
// compacted topic <application.id>-placement.
//
// Members validate what they receive (a leader's garbage is rejected and the
// member rejoins), keep the placement per generation and apply it when kgo
// calls OnPartitionsAssigned. [Balancer.Placement] and
// [Settings.OnAssignment] expose it.
//
// # Hostile or broken members
//
// A member whose join metadata is not a ConsumerMemberMetadata, whose
// UserData is not a Subscription of a known version, whose process id another
// member already uses, that lacks a tag key rack.aware.assignment.tags names,
// or that claims partitions or a plan of a generation that has not happened
// yet, is replaced by empty metadata before franz-go sees it: it gets an
// empty assignment, its owned-partition claims revoke nothing, the leader
// logs one warning naming it and [Stats].RejectedMembers counts it once.
// Claims of past generations are honoured: a member that missed rebalances
// may really still consume what it claims, and revoking is the safe side.
//
// Two claims a usable member makes are checked rather than believed
// (distrust.go). An announced endpoint that is not a plain host:port
// (internal/endpoint: no scheme, path, query, userinfo or fragment; a port
// in 1..65535) is dropped: the member keeps its place in the plan, but with
// no endpoint in the placement no instance forwards a query (or its
// credentials) to it; [Stats].InvalidEndpoints counts it. A checkpoint
// claimed beyond the changelog end is no lag of 0 but an unknown lag (not
// caught up), so it cannot win a task from a replica that is really caught
// up; [Stats].CheckpointsBeyondEnd counts it. (Under exactly-once the last
// stable offset can trail a just-committed checkpoint for a moment, since
// transaction markers are written after the commit returns: such a warning
// can be benign, and costs the member only that round's catch-up credit.)
// Each is logged once per member, its values escaped and cut short.
//
// # Large groups
//
// The broker stores a generation's subscriptions and assignments in one
// record of about 1 MiB (the broker's default limit). While the whole
// placement fits in every assignment with margin ([Settings.MaxInlineBytes]),
// it travels inline; beyond, the leader writes it once, DEFLATE-compressed,
// to the compacted topic <application.id>-placement and every assignment
// carries only the member's own tasks and the record's offset and CRC. At
// 1,000 members x 10,000 tasks a generation then takes ~0.8 MiB, mostly
// subscriptions.
//
// # Versions
//
// Both formats start with a version byte and the latest version the writer
// understands. A leader reads every version up to its own; a member that
// joins with a newer version than the leader understands gets an empty
// assignment in the leader's version, falls back to it and rejoins. Once
// every member understands a newer version, the leader says so in the
// assignment and members step up (Kafka Streams' version probing, KIP-268,
// kept simple). Version 2 adds the member's build string to both formats;
// version 3 adds the assignment's probe triggers (below); version 4 the
// leader's settings to the placement; version 5 the active tasks' byte
// rates to the subscription and the plan's cross-zone traffic to the
// placement (a group with an older member plans with uniform weights).
//
// # Probing rebalances
//
// A plan whose actives are unbalanced waits for receivers to catch up: on a
// warmup, or on a standby the receiver already holds (the assignor never
// warms up a task on a client that holds a replica of it). The leader
// sends each member its probe triggers: those of its standby and warmup
// tasks that lagged beyond acceptable.recovery.lag at plan time and whose
// active would move to it, were it caught up. The member compares their
// checkpoints with the changelog end offsets every WarmupCheckInterval and,
// once one has caught up, bumps probe_seq in its join metadata and calls
// ForceRebalance, so that the next plan makes the move. It asks once per
// trigger and generation; when a rebalance it asked for leaves its roles
// unchanged, it waits twice as long before asking again (1 s up to
// probing.rebalance.interval.ms), so a lag that hovers around the bound
// cannot make the group rebalance in a loop. Members of a group that still
// speaks version 2 watch their warmups only, and the probing deadline is
// the fallback for everything else.
//
// # Static membership
//
// group.instance.id is rejected by [New]: a restarted static leader gets
// SkipAssignment from the coordinator and franz-go skips custom balancing
// (KIP-814), which would leave the group on a stale placement. Rackstream
// uses dynamic membership with a short heartbeat and LeaveGroup on shutdown.
package balancer
