package org.elma.eslauncher;

import java.nio.file.Files;
import java.util.Map;
import java.util.Set;
import org.elasticsearch.env.Environment;
import org.elasticsearch.node.Node;
import org.elasticsearch.plugins.PluginBundle;
import org.elasticsearch.plugins.PluginsLoader;

/** Elasticsearch 9: the Node takes its modules and plugins from a PluginsLoader, as the bootstrap builds it. */
final class NodeFactory {
  static Node create(Environment env) throws Exception {
    Set<PluginBundle> modules = PluginsLoader.loadModulesBundles(env.modulesDir(), false);
    Set<PluginBundle> plugins = Files.isDirectory(env.pluginsDir()) ? PluginsLoader.loadPluginsBundles(env.pluginsDir(), false) : Set.of();
    return new Node(env, PluginsLoader.createPluginsLoader(modules, plugins, Map.of()));
  }
}
