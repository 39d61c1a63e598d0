// KafkaKeys prints every configuration key of a Kafka Streams application as
// Kafka 4.x defines it, for config/kafka_keys.txt: one line per key,
//
//	name<TAB>owners<TAB>type
//
// sorted by name, where owners lists the config classes that define the key
// (streams, producer, consumer, admin: StreamsConfig, ProducerConfig,
// ConsumerConfig, AdminClientConfig), and type is ConfigDef's type
// (PASSWORD for the secrets), or STRING for a key only topics have. The
// owner "topic" marks topic-level keys (TopicConfig's *_CONFIG constants),
// which a Kafka Streams application sets with the "topic." prefix for its
// internal topics. Run by gen.sh.
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.streams.StreamsConfig;

public class KafkaKeys {
    private static final Map<String, TreeSet<String>> owners = new TreeMap<>();
    private static final Map<String, String> types = new TreeMap<>();

    private static void add(String owner, ConfigDef def) {
        for (Map.Entry<String, ConfigDef.ConfigKey> e : def.configKeys().entrySet()) {
            owners.computeIfAbsent(e.getKey(), k -> new TreeSet<>()).add(owner);
            String t = e.getValue().type.name();
            String prev = types.putIfAbsent(e.getKey(), t);
            if (prev != null && !prev.equals(t) && t.equals("PASSWORD")) {
                types.put(e.getKey(), t); // secret wherever any class says so
            }
        }
    }

    public static void main(String[] args) throws Exception {
        add("streams", StreamsConfig.configDef());
        add("producer", ProducerConfig.configDef());
        add("consumer", ConsumerConfig.configDef());
        add("admin", AdminClientConfig.configDef());
        for (Field f : TopicConfig.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getName().endsWith("_CONFIG") && f.getType() == String.class) {
                String name = (String) f.get(null);
                owners.computeIfAbsent(name, k -> new TreeSet<>()).add("topic");
                types.putIfAbsent(name, "STRING");
            }
        }
        StringBuilder out = new StringBuilder();
        for (Map.Entry<String, TreeSet<String>> e : owners.entrySet()) {
            out.append(e.getKey()).append('\t').append(String.join(",", e.getValue())).append('\t').append(types.get(e.getKey())).append('\n');
        }
        System.out.print(out);
    }
}
