// Package assignor computes task placement: which client runs each task's
// active replica and which clients keep its standbys, spread over every
// configured client-tag dimension.
//
// The computation is a pure, deterministic function of its input (no I/O, no
// clocks, no randomness) in the shape of etcd's raft core: the group balancer
// feeds it data and carries its result over the wire. Assign takes an Input
// (the tasks, the settings, the live clients with their tags, capacity,
// previous roles and lags) and returns a Plan with its Quality; Measure
// computes the Quality of any placement (Kafka's, a plan after a loss);
// Spread and CompareSpread score one task's replicas; WhatIf says what
// losing some clients (a tag value, or ids, as ParseSelector reads them)
// would do to a plan: the tasks left without a replica, where each lost
// active fails over, the plan for the survivors; DecodeInput reads the JSON
// scenario of `rackstream assign`, or a /v1/metadata document as the
// previous plan, and DecodeDocument also returns such a document's own
// placement, the plan a live what-if looks at.
//
// # Actives
//
// A task stays on its previous active while that client lives. A task
// without one goes to a caught-up client (lag <= acceptable.recovery.lag),
// the least loaded per unit of capacity; else to the least-lagging holder of
// its state; else to the least loaded. Balance then moves tasks, one at a
// time, from the most loaded clients to less loaded ones that are caught up
// on them, while a move makes the balance strictly better. When no such
// single move is left, balance looks for a chain (see chains.go): src gives
// a task to c1, c1 one to c2, ..., the last one to dst, each hop to a
// client caught up on the task it takes. The middle clients keep their
// count, so the chain does what the single move src -> dst would, without a
// cold client. A breadth-first search over clients finds the shortest one
// (at most one hop per client) from the most loaded source that has one, to
// the least loaded client it may relieve at that depth, ties by id; each
// hop hands on the task it costs least churn to move, then the one the
// receiver lags least on. Only moves that no chain can
// make wait: the client gets a warmup replica (at most max.warmup.replicas
// per plan) and the plan asks for a probing rebalance. Fed back with its
// warmups caught up, plan after plan, this converges to actives per unit of
// capacity that differ by at most one.
//
// # Standbys
//
// A task's spread is, for each key of rack.aware.assignment.tags in order,
// the number of distinct values among its replicas; spreads compare
// lexicographically. Every task gets a spread no other choice of standbys
// could beat. Clients with the same tag tuple form a class and are
// interchangeable for spread, so the optimum is searched over classes (see
// search.go): once per class of active, then, pick by pick, the classes from
// which the optimum is still reachable. Among those, a client holding the
// task's state wins (least lag first), then the least loaded (actives,
// standbys and warmups per unit of capacity), then the smallest id. Every
// task's first standby is placed before any second one; then standbys move
// to lighter clients where the task's spread stays optimal. Kafka Streams'
// greedy pick (docs/design.md §3) can miss the optimum; this cannot, which the
// property tests check by brute force.
//
// Stickiness is bounded by balance, as for actives: a client keeps a
// standby, even one whose state it holds, only while no client that could
// take it (the task's spread kept optimal) would be lighter after taking it
// than the keeper is with it: (replicas(v)+1)/capacity(v) <
// replicas(c)/capacity(c) moves it. With equal capacities a holder keeps a
// standby while it carries at most one replica more than the lightest such
// client. Moves to clients at least as caught up on the task come first,
// then cold ones (the new standby catches up from the changelog; the
// active is not touched); one at a time, along chains, or as a whole set of
// a task's standbys where replacing one alone would lose spread. Standbys
// placed while few clients had joined therefore spread out as more join,
// and a balanced plan fed back stays as it is.
//
// # Cross-zone traffic
//
// Input.RackAwareness says where each task's partitions live: the rack of
// every replica and of the leader of each input, changelog and output
// partition (a table's topic and a repartition topic read count as input, a
// repartition topic written as output), optional byte rates per task, and
// which client tag carries a client's rack (client.rack.tag). Plan.CrossZone
// then reports the plan's expected cross-zone bytes per second: an active
// fetches an input partition across zones when no replica is in its rack,
// and produces to a changelog or output partition across zones when the
// leader is in another rack; a standby fetches a changelog partition across
// zones when no replica is in its rack. Follower fetching (KIP-392) is
// assumed on. A task's rate of a role is split evenly over its partitions
// of that role; a task without rates takes the mean flow weight of those
// with rates, and without any rates every flow weighs 1, so the total counts
// partition flows. CrossZoneOf computes the same for any placement, as
// Measure does its quality.
//
// The strategies are Kafka Streams' rack.aware.assignment.strategy. none,
// the zero value and a scenario's default, is today's placement exactly;
// the plan still reports its traffic. An instance's default is min_traffic
// (DefaultRackAwareStrategy). min_traffic minimises a cost: traffic_cost
// (default 10) per cross-zone flow of mean weight, so a flow twice the mean
// costs twice that and with uniform weights each cross-zone partition costs
// traffic_cost, as in Kafka Streams; plus non_overlap_cost (default 1) for
// an active off the previous generation's client and for a standby on a
// client holding none of the task's state. Kafka Streams counts input
// partitions for actives and changelog partitions for standbys; this also
// counts what actives produce. balance_subtopology plans as min_traffic: a
// task here spans the whole topology, one subtopology, whose balance the
// placement already keeps. We recommend min_traffic wherever brokers set
// broker.rack and clients a rack tag: it gives up no guarantee, and with
// non_overlap_cost it moves a task only when traffic_cost times the weight
// saved exceeds the move.
//
// Nothing is traded for bytes. After actives are placed and balanced, a
// pass lowers their cost without changing any client's active count: swaps
// for tasks some client holds state of (each goes only to its previous
// client or one caught up on it), and for tasks no client holds state of, an
// exact min-cost transportation over rack cells, cancelling negative cycles
// found by Bellman-Ford. A task goes only to a client whose class reaches a
// standby spread as good as that of the client balance chose. Standbys are
// then placed as above, optimal spread first, and rotated in twos and
// threes between clients of different racks, or moved from a most loaded
// client to a least loaded one, where every spread and the evenness rule
// hold. The plan with rack-aware passes is kept only when its cost is below
// that of today's plan on the same input, computed beside it. A move for
// bytes alone waits for its client to catch up: it places no warmup and
// asks for no probing rebalance. A client without the rack tag keeps its
// replicas and gets no new ones from these passes; a task with a partition
// whose replica or leader has no rack keeps its placement; CrossZone.Unknown
// names both, and their flows count as crossing.
//
// A round of swaps costs O(tasks x (racks x log tasks + allowed clients x
// 64)), at most four rounds; the cycles O(moves x (cells^3 + cells x log
// tasks)), a cell per rack and spread rank; the standby pass O(standbys x
// racks^2) spread checks, each standby looking at a bounded number of
// partners; and today's placement runs once more. BenchmarkAssignRacks
// measures them at 1,000 clients x 10,000 tasks.
package assignor
