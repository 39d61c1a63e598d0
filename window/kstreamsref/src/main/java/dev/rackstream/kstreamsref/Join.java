package dev.rackstream.kstreamsref;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.serialization.LongSerializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

/**
 * A stream-stream join scenario: topics {@value #LEFT} and {@value #RIGHT}
 * joined (inner, left or outer) within the scenario's JoinWindows, every
 * result appended to a list in arrival order. Each partition runs in its own
 * driver; records are piped in input order, each to its side's topic.
 */
final class Join {
    static final String LEFT = "left";
    static final String RIGHT = "right";
    /** Kafka Streams' internal setting that throttles unmatched-record emission by wall clock (1000 ms by default). */
    static final String EMIT_INTERVAL = "__emit.interval.ms.kstreams.outer.join.spurious.results.fix__";

    private static final ObjectMapper JSON = new ObjectMapper();

    private Join() {}

    /** One join result; a null side is a record that met nothing. */
    record Output(String key, Long left, Long right, long timestamp) {}

    /** An input record of one side. */
    record Input(boolean left, String key, long value, long timestamp, int partition) {}

    /** A parsed scenario. */
    record Scenario(String kind, long beforeMs, long afterMs, long graceMs, long emitIntervalMs, int partitions,
                    List<Input> records) {
        static Scenario parse(final JsonNode node) {
            final JsonNode join = node.path("join");
            final String kind = join.path("kind").asText();
            if (!kind.equals("inner") && !kind.equals("left") && !kind.equals("outer")) {
                throw new IllegalArgumentException("join kind \"" + kind + "\": want inner, left or outer");
            }
            final int partitions = node.path("partitions").asInt(1);
            if (partitions < 1) {
                throw new IllegalArgumentException("partitions " + partitions + ": want at least 1");
            }
            final List<Input> records = new ArrayList<>();
            for (final JsonNode r : node.path("records")) {
                final String side = r.path("side").asText();
                if (!side.equals("left") && !side.equals("right")) {
                    throw new IllegalArgumentException("record " + records.size() + ": side \"" + side + "\"");
                }
                final Input in = new Input(side.equals("left"), r.path("key").asText(), r.path("value").asLong(),
                    r.path("timestamp").asLong(), r.path("partition").asInt());
                if (in.partition() < 0 || in.partition() >= partitions || in.timestamp() < 0) {
                    throw new IllegalArgumentException("record " + records.size() + ": partition " + in.partition()
                        + " or timestamp " + in.timestamp() + " out of range");
                }
                records.add(in);
            }
            return new Scenario(kind, join.path("before_ms").asLong(), join.path("after_ms").asLong(),
                join.path("grace_ms").asLong(), node.path("emit_interval_ms").asLong(0), partitions, records);
        }
    }

    static void build(final StreamsBuilder builder, final Scenario s, final List<Output> sink) {
        final KStream<String, Long> left = builder.stream(LEFT, Consumed.with(Serdes.String(), Serdes.Long()));
        final KStream<String, Long> right = builder.stream(RIGHT, Consumed.with(Serdes.String(), Serdes.Long()));
        final JoinWindows windows = JoinWindows
            .ofTimeDifferenceAndGrace(Duration.ofMillis(s.beforeMs()), Duration.ofMillis(s.graceMs()))
            .after(Duration.ofMillis(s.afterMs()));
        final ValueJoiner<Long, Long, Long[]> joiner = (l, r) -> new Long[] {l, r};
        final StreamJoined<String, Long, Long> joined = StreamJoined.with(Serdes.String(), Serdes.Long(), Serdes.Long());
        final KStream<String, Long[]> out = switch (s.kind()) {
            case "inner" -> left.join(right, joiner, windows, joined);
            case "left" -> left.leftJoin(right, joiner, windows, joined);
            default -> left.outerJoin(right, joiner, windows, joined);
        };
        out.process(() -> new Processor<String, Long[], Void, Void>() {
            @Override
            public void process(final Record<String, Long[]> r) {
                sink.add(new Output(r.key(), r.value()[0], r.value()[1], r.timestamp()));
            }
        });
    }

    /** Runs every partition of the scenario in its own driver. */
    static ArrayNode run(final Scenario s, final Path stateDir) {
        final ArrayNode partitions = JSON.createArrayNode();
        for (int p = 0; p < s.partitions(); p++) {
            final List<Output> output = new ArrayList<>();
            final StreamsBuilder builder = new StreamsBuilder();
            build(builder, s, output);
            final Properties props = new Properties();
            props.put(StreamsConfig.APPLICATION_ID_CONFIG, "kstreamsref-join");
            props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
            props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.resolve("p" + p).toString());
            props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
            props.put(EMIT_INTERVAL, s.emitIntervalMs());
            final ObjectNode node = partitions.addObject();
            node.put("partition", p);
            try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props, Instant.EPOCH)) {
                final TestInputTopic<String, Long> left =
                    driver.createInputTopic(LEFT, new StringSerializer(), new LongSerializer());
                final TestInputTopic<String, Long> right =
                    driver.createInputTopic(RIGHT, new StringSerializer(), new LongSerializer());
                for (final Input r : s.records()) {
                    if (r.partition() == p) {
                        (r.left() ? left : right).pipeInput(r.key(), r.value(), r.timestamp());
                    }
                }
                final ArrayNode records = node.putArray("output");
                for (final Output o : output) {
                    final ObjectNode rec = records.addObject();
                    rec.put("key", o.key());
                    rec.put("left", o.left());
                    rec.put("right", o.right());
                    rec.put("timestamp", o.timestamp());
                }
                node.put("dropped_records", droppedRecords(driver.metrics()));
            }
        }
        return partitions;
    }

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
}
