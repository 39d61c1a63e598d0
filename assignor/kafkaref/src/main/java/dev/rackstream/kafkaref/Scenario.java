package dev.rackstream.kafkaref;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A placement scenario in Rackstream's input shape, validated for what the
 * reference needs: fixed actives (each task in exactly one client's
 * {@code previous_active}). Clients are kept sorted by id, so that Kafka's
 * tie-break by process id is a tie-break by client id, as in Rackstream.
 * An optional {@code rack_awareness} object (its traffic and non-overlap
 * costs, the client tag carrying the rack, each task's partitions with
 * their roles and replica racks) makes {@link #racks} non-null.
 */
final class Scenario {
    final int tasks;
    final int numStandbyReplicas;
    final List<String> rackAwareAssignmentTags;
    final long acceptableRecoveryLag;
    final int maxWarmupReplicas;
    final List<Client> clients;
    /** The rack awareness, or null when the scenario has none. */
    final Racks racks;

    /** The rack awareness of a scenario. */
    static final class Racks {
        final int trafficCost;
        final int nonOverlapCost;
        final String clientRackTag;
        /** Per task, its partitions; a task without any is absent. */
        final Map<Integer, List<Partition>> partitions;

        Racks(final int trafficCost, final int nonOverlapCost, final String clientRackTag,
              final Map<Integer, List<Partition>> partitions) {
            this.trafficCost = trafficCost;
            this.nonOverlapCost = nonOverlapCost;
            this.clientRackTag = clientRackTag;
            this.partitions = partitions;
        }
    }

    /** One partition of a task: its role (input, changelog, output) and replica racks. */
    static final class Partition {
        final String topic;
        final int partition;
        final String role;
        final TreeSet<String> replicaRacks;

        Partition(final String topic, final int partition, final String role, final TreeSet<String> replicaRacks) {
            this.topic = topic;
            this.partition = partition;
            this.role = role;
            this.replicaRacks = replicaRacks;
        }
    }

    static final class Client {
        final String id;
        final TreeMap<String, String> tags;
        final int capacity;
        final TreeSet<Integer> previousActive;
        final TreeSet<Integer> previousStandby;
        final Map<Integer, Long> lags;

        Client(final String id, final TreeMap<String, String> tags, final int capacity,
               final TreeSet<Integer> previousActive, final TreeSet<Integer> previousStandby,
               final Map<Integer, Long> lags) {
            this.id = id;
            this.tags = tags;
            this.capacity = capacity;
            this.previousActive = previousActive;
            this.previousStandby = previousStandby;
            this.lags = lags;
        }
    }

    private Scenario(final int tasks, final int numStandbyReplicas, final List<String> rackAwareAssignmentTags,
                     final long acceptableRecoveryLag, final int maxWarmupReplicas, final List<Client> clients,
                     final Racks racks) {
        this.tasks = tasks;
        this.numStandbyReplicas = numStandbyReplicas;
        this.rackAwareAssignmentTags = rackAwareAssignmentTags;
        this.acceptableRecoveryLag = acceptableRecoveryLag;
        this.maxWarmupReplicas = maxWarmupReplicas;
        this.clients = clients;
        this.racks = racks;
    }

    static Scenario parse(final JsonNode root) {
        if (!root.isObject()) {
            throw new IllegalArgumentException("scenario: want a JSON object");
        }
        final int tasks = intField(root, "tasks", -1, "scenario");
        if (tasks < 0) {
            throw new IllegalArgumentException("tasks: required, a count >= 0");
        }
        final int standbys = intField(root, "num_standby_replicas", 0, "scenario");
        if (standbys < 0) {
            throw new IllegalArgumentException("num_standby_replicas: " + standbys + " is negative");
        }
        final List<String> rackTags = new ArrayList<>();
        for (final JsonNode key : arrayField(root, "rack_aware_assignment_tags", "scenario")) {
            if (!key.isTextual()) {
                throw new IllegalArgumentException("rack_aware_assignment_tags: " + key + " is not a string");
            }
            rackTags.add(key.asText());
        }
        final long recoveryLag = root.has("acceptable_recovery_lag") ? root.get("acceptable_recovery_lag").asLong() : 10000L;
        final int maxWarmups = intField(root, "max_warmup_replicas", 2, "scenario");

        final List<Client> clients = new ArrayList<>();
        final JsonNode clientsNode = root.get("clients");
        if (clientsNode == null || !clientsNode.isArray()) {
            throw new IllegalArgumentException("clients: required, an array");
        }
        for (int i = 0; i < clientsNode.size(); i++) {
            clients.add(parseClient(clientsNode.get(i), i, tasks));
        }
        clients.sort(Comparator.comparing(c -> c.id));
        for (int i = 1; i < clients.size(); i++) {
            if (clients.get(i).id.equals(clients.get(i - 1).id)) {
                throw new IllegalArgumentException("clients: duplicate id " + clients.get(i).id);
            }
        }
        final String[] activeOf = new String[tasks];
        for (final Client client : clients) {
            for (final int task : client.previousActive) {
                if (activeOf[task] != null) {
                    throw new IllegalArgumentException("task " + task + ": previous_active of both "
                        + activeOf[task] + " and " + client.id + "; the reference needs exactly one active per task");
                }
                activeOf[task] = client.id;
            }
        }
        for (int t = 0; t < tasks; t++) {
            if (activeOf[t] == null) {
                throw new IllegalArgumentException("task " + t
                    + ": in no client's previous_active; the reference takes actives as given");
            }
        }
        final JsonNode racksNode = root.get("rack_awareness");
        final Racks racks = racksNode == null || racksNode.isNull() ? null : parseRacks(racksNode, tasks);
        return new Scenario(tasks, standbys, rackTags, recoveryLag, maxWarmups, clients, racks);
    }

    private static Racks parseRacks(final JsonNode node, final int tasks) {
        final String at = "rack_awareness";
        if (!node.isObject()) {
            throw new IllegalArgumentException(at + ": want an object");
        }
        final int trafficCost = intField(node, "traffic_cost", 10, at);
        final int nonOverlapCost = intField(node, "non_overlap_cost", 1, at);
        final JsonNode tag = node.get("client_rack_tag");
        if (tag == null || !tag.isTextual() || tag.asText().isEmpty()) {
            throw new IllegalArgumentException(at + ".client_rack_tag: required, a non-empty string");
        }
        final Map<Integer, List<Partition>> partitions = new TreeMap<>();
        for (final JsonNode taskNode : arrayField(node, "tasks", at)) {
            final int task = intField(taskNode, "task", -1, at + ".tasks");
            if (task < 0 || task >= tasks || partitions.containsKey(task)) {
                throw new IllegalArgumentException(at + ".tasks: task " + task + " out of range or listed twice");
            }
            final List<Partition> ps = new ArrayList<>();
            for (final JsonNode p : arrayField(taskNode, "partitions", at + ".tasks[" + task + "]")) {
                final TreeSet<String> replicas = new TreeSet<>();
                for (final JsonNode r : arrayField(p, "replicas", at + ".tasks[" + task + "]")) {
                    replicas.add(r.asText());
                }
                ps.add(new Partition(p.path("topic").asText(), p.path("partition").asInt(), p.path("role").asText(), replicas));
            }
            partitions.put(task, ps);
        }
        return new Racks(trafficCost, nonOverlapCost, tag.asText(), partitions);
    }

    private static Client parseClient(final JsonNode node, final int index, final int tasks) {
        final String where = "clients[" + index + "]";
        if (!node.isObject()) {
            throw new IllegalArgumentException(where + ": want an object");
        }
        final JsonNode idNode = node.get("id");
        if (idNode == null || !idNode.isTextual() || idNode.asText().isEmpty()) {
            throw new IllegalArgumentException(where + ".id: required, a non-empty string");
        }
        final String id = idNode.asText();
        final String at = "client " + id;
        final TreeMap<String, String> tags = new TreeMap<>();
        final JsonNode tagsNode = node.get("tags");
        if (tagsNode == null || !tagsNode.isObject()) {
            throw new IllegalArgumentException(at + ": tags: required, an object");
        }
        for (final Iterator<Map.Entry<String, JsonNode>> it = tagsNode.fields(); it.hasNext(); ) {
            final Map.Entry<String, JsonNode> e = it.next();
            tags.put(e.getKey(), e.getValue().asText());
        }
        final int capacity = intField(node, "capacity", 1, at);
        if (capacity < 1) {
            throw new IllegalArgumentException(at + ": capacity " + capacity + " must be at least 1");
        }
        final TreeSet<Integer> prevActive = taskSet(node, "previous_active", tasks, at);
        final TreeSet<Integer> prevStandby = taskSet(node, "previous_standby", tasks, at);
        final Map<Integer, Long> lags = new HashMap<>();
        final JsonNode lagsNode = node.get("lags");
        if (lagsNode != null && lagsNode.isObject()) {
            for (final Iterator<Map.Entry<String, JsonNode>> it = lagsNode.fields(); it.hasNext(); ) {
                final Map.Entry<String, JsonNode> e = it.next();
                lags.put(Integer.parseInt(e.getKey()), e.getValue().asLong());
            }
        }
        return new Client(id, tags, capacity, prevActive, prevStandby, lags);
    }

    private static TreeSet<Integer> taskSet(final JsonNode node, final String field, final int tasks, final String at) {
        final TreeSet<Integer> set = new TreeSet<>();
        for (final JsonNode t : arrayField(node, field, at)) {
            if (!t.isIntegralNumber() || !t.canConvertToInt() || t.asInt() < 0 || t.asInt() >= tasks) {
                throw new IllegalArgumentException(at + ": " + field + ": task " + t + " is not in [0, " + tasks + ")");
            }
            set.add(t.asInt());
        }
        return set;
    }

    private static Iterable<JsonNode> arrayField(final JsonNode node, final String field, final String at) {
        final JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            return List.of();
        }
        if (!value.isArray()) {
            throw new IllegalArgumentException(at + ": " + field + ": want an array");
        }
        return value;
    }

    private static int intField(final JsonNode node, final String field, final int absent, final String at) {
        final JsonNode value = node.get(field);
        if (value == null || value.isNull()) {
            return absent;
        }
        if (!value.isIntegralNumber() || !value.canConvertToInt()) {
            throw new IllegalArgumentException(at + ": " + field + ": " + value + " is not an integer");
        }
        return value.asInt();
    }
}
