// TomcatEcho is the Spring WebSocket row of the frameworks experiment.
// Spring WebSocket is not packaged in Debian 12 (Debian has Spring 4.3's
// modules but no spring-websocket), so the row runs on what Spring
// WebSocket runs on, the servlet container's own WebSocket: embedded
// Tomcat 10 (Debian's libtomcat10-java, /usr/share/java/tomcat10-*.jar)
// and its JSR 356 / Jakarta WebSocket implementation, with one endpoint at
// "/" that writes each text and binary message back as it came, as a
// Spring TextWebSocketHandler echo does through session.sendMessage. No
// compression is negotiated unless the client asks (the benchmark's does
// not). Tomcat's connector sets TCP_NODELAY by default (tcpNoDelay=true),
// so this does not. Tomcat's logging is turned down to warnings.
// scripts/java/build.sh compiles it and writes the java command's
// arguments beside the class.
//
//   java @scripts/java/build/TomcatEcho.args [port=0]
//
// Port 0 takes a free port. Once started it prints one JSON line
// {"msg":"listening","addr":"127.0.0.1:PORT","framework":"tomcat 10.1.x"}
// on stdout, and serves until the JVM is stopped (SIGTERM, SIGINT).

import jakarta.websocket.OnError;
import jakarta.websocket.OnMessage;
import jakarta.websocket.Session;
import jakarta.websocket.server.ServerEndpoint;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Set;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.stream.Stream;
import org.apache.catalina.Context;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.servlets.DefaultServlet;
import org.apache.catalina.startup.Tomcat;
import org.apache.catalina.util.ServerInfo;
import org.apache.tomcat.websocket.server.WsSci;

public final class TomcatEcho {
    // Held so that the logger keeps the level set here: java.util.logging
    // keeps loggers by weak reference.
    private static final Logger ROOT = Logger.getLogger("");

    public static void main(String[] args) throws Exception {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 0;
        ROOT.setLevel(Level.WARNING);
        for (Handler h : ROOT.getHandlers()) {
            h.setLevel(Level.WARNING);
        }

        // Tomcat wants a base directory for its work files: a temporary
        // one, removed at exit.
        Path base = Files.createTempDirectory("tomcat-echo");
        Tomcat tomcat = new Tomcat();
        tomcat.setBaseDir(base.toString());
        Connector connector = new Connector();
        connector.setPort(port);
        connector.setProperty("address", "127.0.0.1");
        // Tomcat's connector refuses to hold more than maxConnections
        // (8,192 by default, Spring Boot's too: connections past it wait
        // in the listen queue unaccepted). The report's Spring server held
        // 52,000, so its cap was lifted; -1 is none, as there.
        connector.setProperty("maxConnections", "-1");
        tomcat.getService().addConnector(connector);
        tomcat.setConnector(connector);

        Context ctx = tomcat.addContext("", base.toString());
        // WsSci registers the annotated endpoint and the filter that
        // upgrades; the filter runs only for a request mapped to a
        // servlet, hence the default servlet at "/".
        ctx.addServletContainerInitializer(new WsSci(), Set.of(Echo.class));
        Tomcat.addServlet(ctx, "default", new DefaultServlet()).addMapping("/");

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                tomcat.stop();
                tomcat.destroy();
            } catch (Exception e) {
                // exiting anyway
            }
            removeAll(base);
        }));
        tomcat.start();
        System.out.println("{\"msg\":\"listening\",\"addr\":\"127.0.0.1:" + connector.getLocalPort()
                + "\",\"framework\":\"tomcat " + ServerInfo.getServerNumber() + "\",\"java\":\""
                + System.getProperty("java.version") + "\"}");
        System.out.flush();
        tomcat.getServer().await();
    }

    private static void removeAll(Path dir) {
        try (Stream<Path> paths = Files.walk(dir)) {
            paths.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
        } catch (IOException e) {
            // a temporary directory left behind
        }
    }

    /** Echo writes every message back on the session it came on. */
    @ServerEndpoint("/")
    public static final class Echo {
        @OnMessage
        public void text(Session session, String message) throws IOException {
            session.getBasicRemote().sendText(message);
        }

        @OnMessage
        public void binary(Session session, ByteBuffer message) throws IOException {
            session.getBasicRemote().sendBinary(message);
        }

        @OnError
        public void error(Session session, Throwable cause) {
            // a bad client costs its connection only
        }
    }
}
