package dev.rackstream.kafkaref;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.ApplicationState;
import org.apache.kafka.streams.processor.assignment.AssignmentConfigs;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsState;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskInfo;
import org.apache.kafka.streams.processor.assignment.TaskTopicPartition;
import org.apache.kafka.streams.state.HostInfo;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

/**
 * The KIP-924 view of a scenario: what Kafka Streams' StreamsPartitionAssignor
 * would hand a custom task assignor for an application of one subtopology
 * whose task 0_i reads partition i of one input topic and owns partition i of
 * one store's changelog (every task stateful, as in Rackstream).
 *
 * <p>Client number c (in id order) is process id 00000000-0000-0000-0000-(c+1):
 * UUIDs compare as their numbers, so Kafka's tie-break by process id follows
 * the client ids' order.
 *
 * <p>With rack awareness, a task's partitions are the scenario's: its input
 * partitions as sources and its changelog partitions as changelogs, each with
 * its replicas' racks (output partitions are not in Kafka's model); a
 * client's rack is the value of the client rack tag; the strategy is
 * min_traffic with the scenario's costs.
 */
final class ScenarioState implements ApplicationState {
    static final String INPUT_TOPIC = "input";
    static final String STORE = "store";
    static final String CHANGELOG_TOPIC = "kafkaref-store-changelog";

    private final Scenario scenario;
    private final ProcessId[] processIds;
    private final Map<ProcessId, KafkaStreamsState> states;
    private final Map<TaskId, TaskInfo> tasks;
    private final AssignmentConfigs configs;

    ScenarioState(final Scenario scenario) {
        this.scenario = scenario;
        this.processIds = new ProcessId[scenario.clients.size()];
        final Map<ProcessId, KafkaStreamsState> states = new TreeMap<>();
        for (int c = 0; c < processIds.length; c++) {
            processIds[c] = new ProcessId(new UUID(0L, c + 1L));
            states.put(processIds[c], new ClientState(processIds[c], scenario.clients.get(c),
                scenario.racks == null ? null : scenario.racks.clientRackTag));
        }
        this.states = Collections.unmodifiableMap(states);
        final Map<TaskId, TaskInfo> tasks = new TreeMap<>();
        for (int t = 0; t < scenario.tasks; t++) {
            final TaskId id = new TaskId(0, t);
            tasks.put(id, new StatefulTask(id, scenario.racks));
        }
        this.tasks = Collections.unmodifiableMap(tasks);
        if (scenario.racks == null) {
            this.configs = new AssignmentConfigs(
                scenario.acceptableRecoveryLag,
                scenario.maxWarmupReplicas,
                scenario.numStandbyReplicas,
                60_000L, // probing.rebalance.interval.ms: unused by standby placement; Kafka's minimum
                scenario.rackAwareAssignmentTags);
        } else {
            this.configs = new AssignmentConfigs(
                scenario.acceptableRecoveryLag,
                scenario.maxWarmupReplicas,
                scenario.numStandbyReplicas,
                60_000L,
                scenario.rackAwareAssignmentTags,
                OptionalInt.of(scenario.racks.trafficCost),
                OptionalInt.of(scenario.racks.nonOverlapCost),
                "min_traffic");
        }
    }

    ProcessId processId(final int client) {
        return processIds[client];
    }

    @Override
    public Map<ProcessId, KafkaStreamsState> kafkaStreamsStates(final boolean computeTaskLags) {
        return states;
    }

    @Override
    public AssignmentConfigs assignmentConfigs() {
        return configs;
    }

    @Override
    public Map<TaskId, TaskInfo> allTasks() {
        return tasks;
    }

    private static SortedSet<TaskId> taskIds(final Set<Integer> partitions) {
        final TreeSet<TaskId> ids = new TreeSet<>();
        for (final int p : partitions) {
            ids.add(new TaskId(0, p));
        }
        return Collections.unmodifiableSortedSet(ids);
    }

    private static final class ClientState implements KafkaStreamsState {
        private final ProcessId processId;
        private final Scenario.Client client;
        private final SortedSet<TaskId> previousActive;
        private final SortedSet<TaskId> previousStandby;
        private final Map<TaskId, Long> lagSums;
        private final String rackTag;

        ClientState(final ProcessId processId, final Scenario.Client client, final String rackTag) {
            this.processId = processId;
            this.client = client;
            this.rackTag = rackTag;
            this.previousActive = taskIds(client.previousActive);
            this.previousStandby = taskIds(client.previousStandby);
            final Map<TaskId, Long> lagSums = new HashMap<>();
            client.lags.forEach((task, lag) -> lagSums.put(new TaskId(0, task), lag));
            this.lagSums = Collections.unmodifiableMap(lagSums);
        }

        @Override
        public ProcessId processId() {
            return processId;
        }

        @Override
        public int numProcessingThreads() {
            return client.capacity;
        }

        @Override
        public SortedSet<String> consumerClientIds() {
            return Collections.unmodifiableSortedSet(new TreeSet<>(Set.of(client.id + "-StreamThread-1-consumer")));
        }

        @Override
        public SortedSet<TaskId> previousActiveTasks() {
            return previousActive;
        }

        @Override
        public SortedSet<TaskId> previousStandbyTasks() {
            return previousStandby;
        }

        @Override
        public long lagFor(final TaskId task) {
            final Long lag = lagSums.get(task);
            if (lag == null) {
                throw new IllegalStateException("client " + client.id + " has no lag for task " + task);
            }
            return lag;
        }

        @Override
        public SortedSet<TaskId> prevTasksByLag(final String consumerClientId) {
            final TreeSet<TaskId> byLag = new TreeSet<>((a, b) -> {
                final int c = Long.compare(lagSums.getOrDefault(a, Long.MAX_VALUE), lagSums.getOrDefault(b, Long.MAX_VALUE));
                return c != 0 ? c : a.compareTo(b);
            });
            byLag.addAll(previousActive);
            byLag.addAll(previousStandby);
            return byLag;
        }

        @Override
        public Map<TaskId, Long> statefulTasksToLagSums() {
            return lagSums;
        }

        @Override
        public Optional<HostInfo> hostInfo() {
            return Optional.empty();
        }

        @Override
        public Map<String, String> clientTags() {
            return Collections.unmodifiableMap(client.tags);
        }

        @Override
        public Optional<String> rackId() {
            if (rackTag == null) {
                return Optional.empty();
            }
            return Optional.ofNullable(client.tags.get(rackTag));
        }
    }

    /**
     * Task 0_p: partition p of the input topic, and of the store's changelog;
     * with rack awareness, the scenario's input and changelog partitions.
     */
    private static final class StatefulTask implements TaskInfo {
        private final TaskId id;
        private final Set<TaskTopicPartition> partitions;

        StatefulTask(final TaskId id, final Scenario.Racks racks) {
            this.id = id;
            if (racks == null) {
                this.partitions = Set.of(
                    new Partition(new TopicPartition(INPUT_TOPIC, id.partition()), true, false, null),
                    new Partition(new TopicPartition(CHANGELOG_TOPIC, id.partition()), false, true, null));
                return;
            }
            final Set<TaskTopicPartition> ps = new HashSet<>();
            for (final Scenario.Partition p : racks.partitions.getOrDefault(id.partition(), List.of())) {
                final boolean source = p.role.equals("input");
                final boolean changelog = p.role.equals("changelog");
                if (source || changelog) {
                    ps.add(new Partition(new TopicPartition(p.topic, p.partition), source, changelog, p.replicaRacks));
                }
            }
            this.partitions = Collections.unmodifiableSet(ps);
        }

        @Override
        public TaskId id() {
            return id;
        }

        @Override
        public boolean isStateful() {
            return true;
        }

        @Override
        public Set<String> stateStoreNames() {
            return Set.of(STORE);
        }

        @Override
        public Set<TaskTopicPartition> topicPartitions() {
            return partitions;
        }
    }

    private static final class Partition implements TaskTopicPartition {
        private final TopicPartition topicPartition;
        private final boolean source;
        private final boolean changelog;
        private final Set<String> racks;

        Partition(final TopicPartition topicPartition, final boolean source, final boolean changelog, final Set<String> racks) {
            this.topicPartition = topicPartition;
            this.source = source;
            this.changelog = changelog;
            this.racks = racks;
        }

        @Override
        public TopicPartition topicPartition() {
            return topicPartition;
        }

        @Override
        public boolean isSource() {
            return source;
        }

        @Override
        public boolean isChangelog() {
            return changelog;
        }

        @Override
        public Optional<Set<String>> rackIds() {
            return Optional.ofNullable(racks);
        }
    }
}
