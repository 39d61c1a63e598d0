package dev.rackstream.kafkaref;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.management.OperatingSystemMXBean;

import org.apache.kafka.streams.processor.TaskId;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment;
import org.apache.kafka.streams.processor.assignment.KafkaStreamsAssignment.AssignedTask;
import org.apache.kafka.streams.processor.assignment.ProcessId;
import org.apache.kafka.streams.processor.assignment.TaskAssignmentUtils;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Reads placement scenarios as JSON lines on stdin and writes, one line per
 * scenario and in the same order, the plan Kafka Streams' own standby
 * assignment makes for it: the public KIP-924 utility
 * {@link TaskAssignmentUtils#defaultStandbyTaskAssignment}, called unmodified.
 * A scenario with {@code rack_awareness} first has its actives optimised by
 * {@link TaskAssignmentUtils#optimizeRackAwareActiveTasks} (min_traffic, the
 * scenario's costs, every client's active count kept), and its standbys,
 * once placed, by {@link TaskAssignmentUtils#optimizeRackAwareStandbyTasks}.
 *
 * <p>Input: Rackstream's scenario shape ({@code tasks}, {@code num_standby_replicas},
 * {@code rack_aware_assignment_tags}, {@code clients} with {@code id}, {@code tags},
 * {@code capacity}, {@code previous_active}, ...), plus an optional {@code name}
 * that is echoed back. Actives are not computed: every task must be in exactly
 * one client's {@code previous_active}, and stays there (unless rack-aware
 * optimisation moves it), so that only standby placement is compared.
 *
 * <p>Output: Rackstream's plan shape ({@code tasks}, {@code clients},
 * {@code probing_rebalance_needed}) without {@code quality}, which the caller
 * computes the same way for both plans, plus {@code name} and
 * {@code elapsed_ns}, {@code cpu_ns} and {@code process_cpu_ns} (wall time, CPU
 * time of the assigning thread, and CPU time of the whole JVM including GC and
 * JIT threads, for building Kafka's view of the scenario and assigning,
 * without JSON). A scenario that cannot be run yields {@code {"name":...,"error":"..."}}
 * and the program goes on with the next line.
 */
public final class Main {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final OperatingSystemMXBean OS =
        (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private Main() {}

    public static void main(final String[] args) throws IOException {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        final Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        int lineNo = 0;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            lineNo++;
            if (line.isBlank()) {
                continue;
            }
            ObjectNode result;
            String name = null;
            try {
                final JsonNode scenario = JSON.readTree(line);
                name = scenario.path("name").isTextual() ? scenario.get("name").asText() : null;
                result = plan(Scenario.parse(scenario));
            } catch (final Exception e) {
                result = JSON.createObjectNode();
                result.put("error", "line " + lineNo + ": " + e.getMessage());
            }
            if (name != null) {
                // Put the name first for readability of the stream.
                final ObjectNode named = JSON.createObjectNode();
                named.put("name", name);
                named.setAll(result);
                result = named;
            }
            out.write(JSON.writeValueAsString(result));
            out.write('\n');
            // One plan per line, flushed: callers may feed the next scenario
            // after reading this answer.
            out.flush();
        }
    }

    /** Places the scenario's standbys with Kafka's utility and renders the plan. */
    static ObjectNode plan(final Scenario scenario) {
        final long start = System.nanoTime();
        final long cpuStart = THREADS.getCurrentThreadCpuTime();
        final long processCpuStart = OS.getProcessCpuTime();
        final ScenarioState state = new ScenarioState(scenario);
        final Map<ProcessId, KafkaStreamsAssignment> assignments = new TreeMap<>();
        for (int c = 0; c < scenario.clients.size(); c++) {
            final Set<AssignedTask> tasks = new HashSet<>();
            for (final int task : scenario.clients.get(c).previousActive) {
                tasks.add(new AssignedTask(new TaskId(0, task), AssignedTask.Type.ACTIVE));
            }
            assignments.put(state.processId(c), KafkaStreamsAssignment.of(state.processId(c), tasks));
        }
        // With rack-aware tags the utility places one standby per task even
        // when zero are configured (its loop tests the count after the first
        // pick); Kafka's own HighAvailabilityTaskAssignor guards the call the
        // same way.
        if (scenario.racks != null) {
            TaskAssignmentUtils.optimizeRackAwareActiveTasks(
                TaskAssignmentUtils.RackAwareOptimizationParams.of(state).forStatefulTasks(), assignments);
        }
        if (scenario.numStandbyReplicas > 0) {
            TaskAssignmentUtils.defaultStandbyTaskAssignment(state, assignments);
            if (scenario.racks != null) {
                TaskAssignmentUtils.optimizeRackAwareStandbyTasks(
                    TaskAssignmentUtils.RackAwareOptimizationParams.of(state).forStatefulTasks(), assignments);
            }
        }
        final long elapsed = System.nanoTime() - start;
        final long cpu = THREADS.getCurrentThreadCpuTime() - cpuStart;
        final long processCpu = OS.getProcessCpuTime() - processCpuStart;
        final ObjectNode plan = render(scenario, state, assignments);
        plan.put("elapsed_ns", elapsed);
        plan.put("cpu_ns", cpu);
        plan.put("process_cpu_ns", processCpu);
        return plan;
    }

    private static ObjectNode render(final Scenario scenario,
                                     final ScenarioState state,
                                     final Map<ProcessId, KafkaStreamsAssignment> assignments) {
        final String[] active = new String[scenario.tasks];
        final List<TreeSet<String>> standbys = new ArrayList<>(scenario.tasks);
        for (int t = 0; t < scenario.tasks; t++) {
            standbys.add(new TreeSet<>());
        }
        final ObjectNode plan = JSON.createObjectNode();
        final ArrayNode clients = JSON.createArrayNode();
        for (int c = 0; c < scenario.clients.size(); c++) {
            final Scenario.Client client = scenario.clients.get(c);
            final KafkaStreamsAssignment assignment = assignments.get(state.processId(c));
            final TreeSet<Integer> clientActive = new TreeSet<>();
            final TreeSet<Integer> clientStandby = new TreeSet<>();
            for (final AssignedTask task : assignment.tasks().values()) {
                final int partition = task.id().partition();
                if (task.type() == AssignedTask.Type.ACTIVE) {
                    clientActive.add(partition);
                    active[partition] = client.id;
                } else {
                    clientStandby.add(partition);
                    standbys.get(partition).add(client.id);
                }
            }
            final ObjectNode node = clients.addObject();
            node.put("id", client.id);
            final ObjectNode tags = node.putObject("tags");
            client.tags.forEach(tags::put);
            clientActive.forEach(node.putArray("active")::add);
            clientStandby.forEach(node.putArray("standby")::add);
            node.putArray("warmup");
        }
        final ArrayNode tasks = plan.putArray("tasks");
        for (int t = 0; t < scenario.tasks; t++) {
            final ObjectNode node = tasks.addObject();
            node.put("task", t);
            node.put("active", active[t]);
            standbys.get(t).forEach(node.putArray("standby")::add);
            node.putArray("warmup");
        }
        plan.set("clients", clients);
        plan.put("probing_rebalance_needed", false);
        return plan;
    }
}
