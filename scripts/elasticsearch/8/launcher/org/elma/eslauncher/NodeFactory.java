package org.elma.eslauncher;

import org.elasticsearch.env.Environment;
import org.elasticsearch.node.Node;

/** Elasticsearch 8: the Node loads its modules and plugins itself, from the environment's folders. */
final class NodeFactory {
  static Node create(Environment env) {
    return new Node(env);
  }
}
