package dev.rackstream.jvmecho;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * Answers each line of stdin with "echo " and the line. The line "fail"
 * makes it write a reason to stderr and exit with status 1.
 */
public final class Main {
    private Main() {}

    public static void main(final String[] args) throws IOException {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null; line = in.readLine()) {
            if (line.equals("fail")) {
                System.err.println("jvmecho: asked to fail");
                System.exit(1);
            }
            System.out.println("echo " + line);
            System.out.flush();
        }
    }
}
