package dev.rackstream.kstreamsref;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.TestInputTopic;
import org.apache.kafka.streams.TopologyTestDriver;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueIterator;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.ValueAndTimestamp;

import java.nio.file.Path;
import java.time.Instant;
import java.util.Properties;

/**
 * A groupBy count: the input's records, keyed by their own key, re-keyed by
 * their group (the value) through a repartition topic and counted per group,
 * as {@code stream.groupBy((key, group) -> group).count()}. A scenario of this
 * kind has {@code "group_by": true} and records
 * {@code {"key","group","timestamp"}}, a null group being a tombstone.
 *
 * <p>One driver runs the whole input: the driver hands each repartitioned
 * record to the counting task before the next input record, as one task per
 * side would see them with the input in this order. The record cache is off,
 * so every count is emitted. The result is {@code {"name","output","store"}}:
 * every output record of the count's stream (key, value, timestamp) in order,
 * and the store's counts by key.
 */
final class GroupByCount {
    static final String INPUT = "orders";
    static final String STORE = "counts";

    private GroupByCount() {}

    /** Reports whether the scenario is a groupBy count. */
    static boolean is(final JsonNode scenario) {
        return scenario.path("group_by").asBoolean(false);
    }

    /** Runs the scenario and puts its output and store into result. */
    static void run(final JsonNode scenario, final Path stateDir, final ObjectNode result) {
        final StreamsBuilder builder = new StreamsBuilder();
        final ArrayNode output = result.putArray("output");
        builder.stream(INPUT, Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((key, group) -> group, Grouped.with("by-group", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long())
                .withCachingDisabled())
            .toStream()
            .process(() -> new Processor<String, Long, Void, Void>() {
                @Override
                public void process(final Record<String, Long> r) {
                    final ObjectNode rec = output.addObject();
                    rec.put("key", r.key());
                    rec.put("value", r.value());
                    rec.put("timestamp", r.timestamp());
                }
            });
        final Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "kstreamsref");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, "unused:9092");
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
        props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0L);
        try (TopologyTestDriver driver = new TopologyTestDriver(builder.build(), props, Instant.EPOCH)) {
            final TestInputTopic<String, String> input =
                driver.createInputTopic(INPUT, new StringSerializer(), new StringSerializer());
            for (final JsonNode r : scenario.path("records")) {
                final JsonNode group = r.path("group");
                input.pipeInput(r.path("key").asText(), group.isNull() ? null : group.asText(), r.path("timestamp").asLong());
            }
            final ArrayNode store = result.putArray("store");
            final KeyValueStore<String, ValueAndTimestamp<Long>> counts = driver.getTimestampedKeyValueStore(STORE);
            try (KeyValueIterator<String, ValueAndTimestamp<Long>> it = counts.all()) {
                while (it.hasNext()) {
                    final KeyValue<String, ValueAndTimestamp<Long>> kv = it.next();
                    final ObjectNode rec = store.addObject();
                    rec.put("key", kv.key);
                    rec.put("value", kv.value.value());
                    rec.put("timestamp", kv.value.timestamp());
                }
            }
        }
    }
}
