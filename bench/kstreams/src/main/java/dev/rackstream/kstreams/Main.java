package dev.rackstream.kstreams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.WindowStore;

/**
 * The Kafka Streams side of Rackstream's processing benchmark: a per-key count
 * of an input topic (String keys, opaque byte values), materialised in RocksDB
 * as the store "counts" (changelog {@code <application.id>-counts-changelog}),
 * every updated count written to an output topic (String key, Long value).
 *
 * <pre>java -jar kstreams-count.jar BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR [key=value ...]</pre>
 *
 * The key=value arguments are StreamsConfig settings (num.standby.replicas,
 * commit.interval.ms, num.stream.threads, statestore.cache.max.bytes, ...),
 * except the program's own: {@code rackstream.window.size.ms=N} makes the job
 * a windowed count, groupByKey().windowedBy(TimeWindows.ofSizeAndGrace(N ms,
 * {@code rackstream.window.grace.ms}, default 0)).count(), materialised as the
 * window store "counts" and written to the output with Kafka Streams' time
 * windowed key serde (the key, then the window start) and a Long value.
 * The program prints one line per event on stdout, for the Go driver:
 * {@code STARTED <epoch ms>} once start() returned, {@code RUNNING <epoch ms>}
 * on every transition to RUNNING, {@code RESTORED <records> <first start ms>
 * <last end ms>} after each restore, {@code STATE <new> <old>} on every state
 * change, {@code CLOSED} at the end. It runs until its stdin closes, then
 * closes Kafka Streams cleanly, leaving the group.
 */
public final class Main {
    public static void main(String[] args) throws Exception {
        System.setProperty("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        System.setProperty("org.slf4j.simpleLogger.logFile", "System.err");
        if (args.length < 5) {
            System.err.println("usage: kstreams-count BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR [key=value ...]");
            System.exit(2);
        }
        String bootstrap = args[0], appID = args[1], input = args[2], output = args[3], stateDir = args[4];
        long windowMs = 0, graceMs = 0;

        Properties props = new Properties();
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, appID);
        props.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
        props.put(StreamsConfig.consumerPrefix("auto.offset.reset"), "earliest");
        for (int i = 5; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            if (eq <= 0) {
                System.err.println("argument " + (i + 1) + " is not key=value: " + args[i]);
                System.exit(2);
            }
            String key = args[i].substring(0, eq), value = args[i].substring(eq + 1);
            switch (key) {
                case "rackstream.window.size.ms" -> windowMs = Long.parseLong(value);
                case "rackstream.window.grace.ms" -> graceMs = Long.parseLong(value);
                default -> props.put(key, value);
            }
        }

        StreamsBuilder builder = new StreamsBuilder();
        KGroupedStream<String, byte[]> grouped = builder.stream(input, Consumed.with(Serdes.String(), Serdes.ByteArray()))
            .groupByKey();
        if (windowMs > 0) {
            grouped.windowedBy(TimeWindows.ofSizeAndGrace(Duration.ofMillis(windowMs), Duration.ofMillis(graceMs)))
                .count(Materialized.<String, Long, WindowStore<Bytes, byte[]>>as("counts")
                    .withKeySerde(Serdes.String())
                    .withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(WindowedSerdes.timeWindowedSerdeFrom(String.class, windowMs), Serdes.Long()));
        } else {
            grouped.count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                    .withKeySerde(Serdes.String())
                    .withValueSerde(Serdes.Long()))
                .toStream()
                .to(output, Produced.with(Serdes.String(), Serdes.Long()));
        }

        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        Object out = new Object();
        AtomicLong restored = new AtomicLong(), firstStart = new AtomicLong(), lastEnd = new AtomicLong();
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long startingOffset, long endingOffset) {
                firstStart.compareAndSet(0, System.currentTimeMillis());
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEndOffset, long numRestored) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long totalRestored) {
                restored.addAndGet(totalRestored);
                lastEnd.set(System.currentTimeMillis());
            }
        });
        streams.setStateListener((now, old) -> {
            long at = System.currentTimeMillis();
            synchronized (out) {
                System.out.println("STATE " + now + " " + old);
                if (now == KafkaStreams.State.RUNNING) {
                    if (firstStart.get() != 0) {
                        System.out.println("RESTORED " + restored.get() + " " + firstStart.get() + " " + lastEnd.get());
                    }
                    System.out.println("RUNNING " + at);
                }
                System.out.flush();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.err.println("kstreams-count: stream thread failed: " + e);
            e.printStackTrace();
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });

        streams.start();
        synchronized (out) {
            System.out.println("STARTED " + System.currentTimeMillis());
            System.out.flush();
        }

        BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        while (stdin.readLine() != null) {
            // The driver only closes stdin; lines are ignored.
        }
        // Leave the group on close (Kafka Streams stays a member by default
        // until its session times out), so that the next instance of the
        // application, the restore, is assigned at once.
        boolean clean = streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
            .withTimeout(Duration.ofSeconds(60)));
        synchronized (out) {
            System.out.println(clean ? "CLOSED" : "CLOSE-TIMEOUT");
            System.out.flush();
        }
        System.exit(clean ? 0 : 1);
    }
}
