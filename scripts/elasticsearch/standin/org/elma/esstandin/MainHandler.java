package org.elma.esstandin;

import java.util.List;
import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;

/**
 * TEST-ONLY stand-in for `GET /` and `HEAD /` of the rest-root module (the client's info()/ping()): name, cluster
 * name, the real version block from Build.current(), tagline; cluster_uuid is "_na_".
 */
final class MainHandler extends BaseRestHandler {
  private final String nodeName;
  private final String clusterName;

  MainHandler(String nodeName, String clusterName) {
    this.nodeName = nodeName;
    this.clusterName = clusterName;
  }

  @Override
  public String getName() {
    return "elma_test_main_action";
  }

  @Override
  public List<Route> routes() {
    return List.of(new Route(RestRequest.Method.GET, "/"), new Route(RestRequest.Method.HEAD, "/"));
  }

  @Override
  protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) {
    return channel -> {
      if (request.method() == RestRequest.Method.HEAD) {
        channel.sendResponse(new RestResponse(RestStatus.OK, "application/json", ""));
        return;
      }
      Build build = Build.current();
      XContentBuilder b = channel.newBuilder();
      b.startObject();
      b.field("name", nodeName);
      b.field("cluster_name", clusterName);
      b.field("cluster_uuid", "_na_");
      b.startObject("version");
      b.field("number", build.qualifiedVersion());
      b.field("build_flavor", build.flavor());
      b.field("build_type", build.type().displayName());
      b.field("build_hash", build.hash());
      b.field("build_date", build.date());
      b.field("build_snapshot", build.isSnapshot());
      b.field("lucene_version", org.apache.lucene.util.Version.LATEST.toString());
      b.field("minimum_wire_compatibility_version", build.minWireCompatVersion());
      b.field("minimum_index_compatibility_version", build.minIndexCompatVersion());
      b.endObject();
      b.field("tagline", "You Know, for Search");
      b.endObject();
      channel.sendResponse(new RestResponse(RestStatus.OK, b));
    };
  }
}
