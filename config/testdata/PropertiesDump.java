// PropertiesDump reads each file named on the command line with
// java.util.Properties.load(Reader) as UTF-8 and prints its keys and values,
// sorted, as Go-quotable JSON-ish lines, so that config's tests can compare
// ParseProperties with Java's reading. Run by TestParsePropertiesMatchesJava.
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class PropertiesDump {
    public static void main(String[] args) throws Exception {
        for (String path : args) {
            Properties p = new Properties();
            String result;
            try (Reader r = new InputStreamReader(new FileInputStream(path), StandardCharsets.UTF_8)) {
                p.load(r);
                StringBuilder b = new StringBuilder();
                for (String k : new TreeSet<>(p.stringPropertyNames())) {
                    b.append(hex(k)).append('=').append(hex(p.getProperty(k))).append(';');
                }
                result = b.toString();
            } catch (IllegalArgumentException e) {
                result = "ERROR";
            }
            System.out.println(path + "\t" + result);
        }
    }

    // hex writes a string's UTF-8 bytes in hex, so no escaping is needed.
    static String hex(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : s.getBytes(StandardCharsets.UTF_8)) b.append(String.format("%02x", x));
        return b.toString();
    }
}
