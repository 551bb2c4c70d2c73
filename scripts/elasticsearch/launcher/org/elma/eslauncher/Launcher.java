package org.elma.eslauncher;

import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.InternalSettingsPreparer;
import org.elasticsearch.node.Node;

/**
 * TEST-ONLY launcher: starts an Elasticsearch Node in-process, skipping org.elasticsearch.bootstrap.Elasticsearch
 * (which needs the server CLI to pipe ServerArgs on stdin and, on 9, the entitlement agent jar; neither is on Maven
 * Central). Natives init, the security manager (8) or entitlements (9), bootstrap checks and the pid file are skipped.
 * Usage: java -p lib --add-modules ALL-MODULE-PATH -cp launcher org.elma.eslauncher.Launcher <home> [-Ekey=value ...]
 * How the Node is built differs by major version: see NodeFactory under scripts/elasticsearch/<major>/launcher.
 */
public final class Launcher {
  public static void main(String[] args) throws Exception {
    Path home = Path.of(args[0]).toAbsolutePath();
    Settings.Builder b = Settings.builder().put("path.home", home.toString());
    for (int i = 1; i < args.length; i++) {
      String a = args[i].startsWith("-E") ? args[i].substring(2) : args[i];
      int eq = a.indexOf('=');
      b.put(a.substring(0, eq), a.substring(eq + 1));
    }
    Settings settings = b.build();
    LogConfigurator.registerErrorListener();
    LogConfigurator.configureESLogging();
    Environment env = InternalSettingsPreparer.prepareEnvironment(settings, Map.of(), home.resolve("config"), () -> "elma-test");
    LogConfigurator.setNodeName("elma-test");
    LogConfigurator.configure(env, true); // the flag is useConsole: false removes the console appender
    Node node = NodeFactory.create(env);
    CountDownLatch stop = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      try { node.close(); } catch (Exception e) { e.printStackTrace(); }
      stop.countDown();
    }));
    node.start();
    System.out.println("ELMA-ES-STARTED");
    stop.await();
  }
}
