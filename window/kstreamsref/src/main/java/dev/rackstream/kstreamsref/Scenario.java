package dev.rackstream.kstreamsref;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;

/** One windowed-aggregation scenario, parsed from its JSON line and checked. */
final class Scenario {
    final String type;
    final long sizeMs;
    final long advanceMs;
    final long timeDifferenceMs;
    final long gapMs;
    final long graceMs;
    final long retentionMs;
    final boolean sum;
    final boolean emitFinal;
    final long emitIntervalMs;
    final int partitions;
    final List<Input> records = new ArrayList<>();

    /** An input record. */
    static final class Input {
        final String key;
        final long value;
        final long timestamp;
        final int partition;

        Input(final String key, final long value, final long timestamp, final int partition) {
            this.key = key;
            this.value = value;
            this.timestamp = timestamp;
            this.partition = partition;
        }
    }

    private Scenario(final JsonNode node) {
        final JsonNode window = node.path("window");
        type = window.path("type").asText();
        sizeMs = window.path("size_ms").asLong();
        advanceMs = window.path("advance_ms").asLong();
        timeDifferenceMs = window.path("time_difference_ms").asLong();
        gapMs = window.path("gap_ms").asLong();
        graceMs = window.path("grace_ms").asLong();
        retentionMs = window.path("retention_ms").asLong();
        final String aggregation = node.path("aggregation").asText();
        final String emit = node.path("emit").asText();
        if (!aggregation.equals("count") && !aggregation.equals("sum")) {
            throw new IllegalArgumentException("aggregation " + quote(aggregation) + ": want count or sum");
        }
        if (!emit.equals("update") && !emit.equals("final")) {
            throw new IllegalArgumentException("emit " + quote(emit) + ": want update or final");
        }
        sum = aggregation.equals("sum");
        emitFinal = emit.equals("final");
        emitIntervalMs = node.path("emit_interval_ms").asLong(0);
        partitions = node.path("partitions").asInt(1);
        if (partitions < 1) {
            throw new IllegalArgumentException("partitions " + partitions + ": want at least 1");
        }
        for (final JsonNode r : node.path("records")) {
            final Input in = new Input(r.path("key").asText(), r.path("value").asLong(),
                r.path("timestamp").asLong(), r.path("partition").asInt());
            if (in.partition < 0 || in.partition >= partitions) {
                throw new IllegalArgumentException("record " + records.size() + ": partition " + in.partition
                    + " outside [0, " + partitions + ")");
            }
            if (in.timestamp < 0) {
                throw new IllegalArgumentException("record " + records.size() + ": timestamp " + in.timestamp
                    + " is negative");
            }
            records.add(in);
        }
    }

    static Scenario parse(final JsonNode node) {
        return new Scenario(node);
    }

    private static String quote(final String s) {
        return "\"" + s + "\"";
    }
}
