package dev.rackstream.kstreamsref;

import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.EmitStrategy;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.SessionStore;
import org.apache.kafka.streams.state.WindowStore;

import java.time.Duration;
import java.util.List;

/**
 * The topology under test: input topic {@value #INPUT}, grouped by key and
 * windowed as the scenario says, counted or summed into the store
 * {@value #STORE} with caching off, and every record of the result table's
 * stream appended to a list in arrival order.
 */
final class Aggregation {
    static final String INPUT = "input";
    static final String STORE = "windows";

    private Aggregation() {}

    /** One output record of the windowed table's stream; value null is a tombstone. */
    record Output(String key, long start, long end, Long value, long timestamp) {}

    static void build(final StreamsBuilder builder, final Scenario s, final List<Output> sink) {
        final KGroupedStream<String, Long> grouped = builder
            .stream(INPUT, Consumed.with(Serdes.String(), Serdes.Long()))
            .groupByKey(Grouped.with(Serdes.String(), Serdes.Long()));
        final KTable<Windowed<String>, Long> table = switch (s.type) {
            case "tumbling", "hopping", "sliding" -> timeWindowed(grouped, s);
            case "session" -> sessionWindowed(grouped, s);
            default -> throw new IllegalArgumentException(
                "window type \"" + s.type + "\": want tumbling, hopping, sliding or session");
        };
        table.toStream().process(() -> new Processor<Windowed<String>, Long, Void, Void>() {
            @Override
            public void process(final Record<Windowed<String>, Long> r) {
                sink.add(new Output(r.key().key(), r.key().window().start(), r.key().window().end(),
                    r.value(), r.timestamp()));
            }
        });
    }

    private static KTable<Windowed<String>, Long> timeWindowed(final KGroupedStream<String, Long> grouped,
                                                                final Scenario s) {
        TimeWindowedKStream<String, Long> windowed = switch (s.type) {
            case "tumbling" -> grouped.windowedBy(
                TimeWindows.ofSizeAndGrace(Duration.ofMillis(s.sizeMs), Duration.ofMillis(s.graceMs)));
            case "hopping" -> grouped.windowedBy(
                TimeWindows.ofSizeAndGrace(Duration.ofMillis(s.sizeMs), Duration.ofMillis(s.graceMs))
                    .advanceBy(Duration.ofMillis(s.advanceMs)));
            default -> grouped.windowedBy(
                SlidingWindows.ofTimeDifferenceAndGrace(Duration.ofMillis(s.timeDifferenceMs),
                    Duration.ofMillis(s.graceMs)));
        };
        if (s.emitFinal) {
            windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        Materialized<String, Long, WindowStore<Bytes, byte[]>> store =
            Materialized.<String, Long, WindowStore<Bytes, byte[]>>as(STORE)
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long())
                .withCachingDisabled();
        if (s.retentionMs > 0) {
            store = store.withRetention(Duration.ofMillis(s.retentionMs));
        }
        return s.sum ? windowed.aggregate(() -> 0L, (key, value, agg) -> agg + value, store) : windowed.count(store);
    }

    private static KTable<Windowed<String>, Long> sessionWindowed(final KGroupedStream<String, Long> grouped,
                                                                   final Scenario s) {
        SessionWindowedKStream<String, Long> windowed = grouped.windowedBy(
            SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(s.gapMs), Duration.ofMillis(s.graceMs)));
        if (s.emitFinal) {
            windowed = windowed.emitStrategy(EmitStrategy.onWindowClose());
        }
        Materialized<String, Long, SessionStore<Bytes, byte[]>> store =
            Materialized.<String, Long, SessionStore<Bytes, byte[]>>as(STORE)
                .withKeySerde(Serdes.String())
                .withValueSerde(Serdes.Long())
                .withCachingDisabled();
        if (s.retentionMs > 0) {
            store = store.withRetention(Duration.ofMillis(s.retentionMs));
        }
        return s.sum
            ? windowed.aggregate(() -> 0L, (key, value, agg) -> agg + value, (key, a, b) -> a + b, store)
            : windowed.count(store);
    }
}
