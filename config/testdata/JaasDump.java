// JaasDump parses each file named on the command line as a sasl.jaas.config
// value with Kafka's own client code (JaasContext.loadClientContext, as
// Kafka's clients read the key) and prints one line per file: the login
// module and option names and values in hex, the control flag, or ERROR
// and Kafka's message. Run by TestParseJAASMatchesKafka with the jars of
// config/kafkakeys/gen.sh --libs.
import java.nio.file.*;
import java.util.*;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.common.config.types.Password;
import org.apache.kafka.common.security.JaasContext;

public class JaasDump {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            String text = new String(Files.readAllBytes(Paths.get(path)), "UTF-8");
            String result;
            try {
                Map<String, Object> configs = new HashMap<>();
                configs.put("sasl.jaas.config", new Password(text));
                JaasContext ctx = JaasContext.loadClientContext(configs);
                AppConfigurationEntry e = ctx.configurationEntries().get(0);
                StringBuilder b = new StringBuilder();
                b.append(hex(e.getLoginModuleName())).append(' ').append(e.getControlFlag().toString()).append(' ');
                for (String k : new TreeSet<>(e.getOptions().keySet())) {
                    b.append(hex(k)).append('=').append(hex(String.valueOf(e.getOptions().get(k)))).append(';');
                }
                result = b.toString();
            } catch (Exception ex) {
                result = "ERROR " + ex.getMessage();
            }
            System.out.println(result.replace('\n', ' '));
        }
    }
    static String hex(String s) throws Exception {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes("UTF-8")) b.append(String.format("%02x", x));
        return b.toString();
    }
}
