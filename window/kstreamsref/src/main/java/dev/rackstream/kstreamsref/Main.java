package dev.rackstream.kstreamsref;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;
import org.apache.kafka.streams.state.WindowStore;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeSet;

/**
 * Reads windowed-aggregation scenarios as JSON lines on stdin and writes, one
 * line per scenario and in the same order, what Kafka Streams makes of them:
 * per partition, the records the windowed table's stream emits, in order, and
 * the window store's content at the end.
 *
 * <p>Each partition runs in its own {@link TopologyTestDriver}, as each
 * partition is its own task in Kafka Streams: its own stream time and stores.
 * The driver's wall clock stays at the epoch, the record cache is off, and the
 * emit-final throttle is {@code emit_interval_ms} (default 0), so the output
 * depends on the input alone.
 *
 * <p>A scenario that cannot be run yields {@code {"name":...,"error":"..."}}
 * and the program goes on with the next line.
 */
public final class Main {
    /** Kafka Streams' internal setting that throttles emit-final by wall clock (1000 ms by default). */
    static final String EMIT_INTERVAL = "__emit.interval.ms.kstreams.windowed.aggregation__";

    private static final ObjectMapper JSON = new ObjectMapper();

    private Main() {}

    public static void main(final String[] args) throws IOException {
        final Path stateRoot = Files.createTempDirectory("kstreamsref");
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(stateRoot.toFile())));
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        final Writer out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        int lineNo = 0;
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            lineNo++;
            if (line.isBlank()) {
                continue;
            }
            final ObjectNode result = JSON.createObjectNode();
            try {
                final JsonNode scenario = JSON.readTree(line);
                result.put("name", scenario.path("name").asText());
                final Path stateDir = Files.createTempDirectory(stateRoot, "s");
                try {
                    if (GroupByCount.is(scenario)) {
                        GroupByCount.run(scenario, stateDir, result);
                    } else {
                        result.set("partitions", run(Scenario.parse(scenario), stateDir));
                    }
                } finally {
                    deleteTree(stateDir.toFile());
                }
            } catch (final Exception e) {
                result.remove("partitions");
                result.put("error", "line " + lineNo + ": " + e);
            }
            out.write(JSON.writeValueAsString(result));
            out.write('\n');
            // One result per line, flushed: callers may send the next scenario
            // after reading this answer.
            out.flush();
        }
    }

    /** Runs every partition of the scenario in its own driver. */
    static ArrayNode run(final Scenario s, final Path stateDir) {
        final ArrayNode partitions = JSON.createArrayNode();
        for (int p = 0; p < s.partitions; p++) {
            final List<Aggregation.Output> output = new ArrayList<>();
            final StreamsBuilder builder = new StreamsBuilder();
            Aggregation.build(builder, s, output);
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, "kstreamsref");
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve("p" + p).toString());
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
            props.put(EMIT_INTERVAL, s.emitIntervalMs);
            final ObjectNode node = partitions.addObject();
            node.put("partition", p);
            try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props, Instant.EPOCH)) {
                final TestInputTopic<String, Long> input =
                    driver.createInputTopic(Aggregation.INPUT, new StringSerializer(), new LongSerializer());
                final TreeSet<String> keys = new TreeSet<>();
                for (final Scenario.Input r : s.records) {
                    if (r.partition == p) {
                        input.pipeInput(r.key, r.value, r.timestamp);
                        keys.add(r.key);
                    }
                }
                final ArrayNode records = node.putArray("output");
                for (final Aggregation.Output o : output) {
                    final ObjectNode rec = records.addObject();
                    rec.put("key", o.key());
                    rec.put("start", o.start());
                    rec.put("end", o.end());
                    if (o.value() == null) {
                        rec.putNull("value");
                    } else {
                        rec.put("value", o.value());
                    }
                    rec.put("timestamp", o.timestamp());
                }
                final ArrayNode store = node.putArray("store");
                for (final Stored w : readStore(driver, s, keys)) {
                    final ObjectNode rec = store.addObject();
                    rec.put("key", w.key());
                    rec.put("start", w.start());
                    rec.put("end", w.end());
                    rec.put("value", w.value());
                }
                node.put("dropped_records", droppedRecords(driver.metrics()));
            }
        }
        return partitions;
    }

    /** One window of the store. */
    record Stored(String key, long start, long end, long value) {}

    /**
     * Reads every window (or session) the store still returns, sorted by key
     * (as UTF-8 bytes), start and end.
     */
    private static List<Stored> readStore(final TopologyTestDriver driver, final Scenario s, final TreeSet<String> keys) {
        final List<Stored> out = new ArrayList<>();
        if (s.type.equals("session")) {
            final SessionStore<String, Long> store = driver.getSessionStore(Aggregation.STORE);
            for (final String key : keys) {
                try (KeyValueIterator<Windowed<String>, Long> it = store.fetch(key)) {
                    it.forEachRemaining(kv -> out.add(stored(kv.key, kv.value)));
                }
            }
        } else {
            final WindowStore<String, ValueAndTimestamp<Long>> store =
                driver.getTimestampedWindowStore(Aggregation.STORE);
            try (KeyValueIterator<Windowed<String>, ValueAndTimestamp<Long>> it = store.fetchAll(0L, Long.MAX_VALUE)) {
                it.forEachRemaining(kv -> out.add(stored(kv.key, kv.value.value())));
            }
        }
        out.sort(Comparator
            .<Stored, byte[]>comparing(w -> w.key().getBytes(StandardCharsets.UTF_8), Arrays::compareUnsigned)
            .thenComparingLong(Stored::start)
            .thenComparingLong(Stored::end));
        return out;
    }

    private static Stored stored(final Windowed<String> w, final long value) {
        return new Stored(w.key(), w.window().start(), w.window().end(), value);
    }

    /** The task's dropped-records-total: records skipped for a null key or a closed window. */
    private static long droppedRecords(final Map<MetricName, ? extends Metric> metrics) {
        double total = 0;
        for (final Map.Entry<MetricName, ? extends Metric> e : metrics.entrySet()) {
            if (e.getKey().name().equals("dropped-records-total")
                && e.getKey().group().equals("stream-task-metrics")) {
                total += ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return (long) total;
    }

    private static void deleteTree(final File f) {
        final File[] children = f.listFiles();
        if (children != null) {
            for (final File c : children) {
                deleteTree(c);
            }
        }
        f.delete();
    }
}
