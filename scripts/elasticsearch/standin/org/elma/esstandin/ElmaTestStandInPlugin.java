package org.elma.esstandin;

import java.util.Map;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.cjk.CJKAnalyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.AnalysisPlugin;
import java.util.Collection;
import java.util.List;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.elasticsearch.Build;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.plugins.Plugin;

/**
 * TEST-ONLY stand-in for what Maven Central lacks (the modules analysis-common, reindex and rest-root are not
 * published). Never used outside tests; the compose file keeps the official image.
 * (1) `english` and `cjk` analyzers: Lucene EnglishAnalyzer (standard tokenizer, English possessive filter,
 *     lowercase, English stop words, Porter stemmer) and CJKAnalyzer (width folding, lowercase, CJK bigrams,
 *     its default stop set). No settings (stopwords, stem_exclusion) are honoured.
 * (2) `POST /{index}/_delete_by_query` (see DeleteByQueryHandler).
 * (3) `GET /` and `HEAD /` (rest-root's main action, the client's info()/ping()): name, cluster name, version
 *     number, Lucene version, tagline; cluster_uuid is "_na_".
 * (4) registers the test setting index.soft_deletes.retention_lease.sync_interval (see getSettings).
 */
public class ElmaTestStandInPlugin extends Plugin implements AnalysisPlugin, ActionPlugin {
  /**
   * Registers the (otherwise test-framework-only) index setting `index.soft_deletes.retention_lease.sync_interval`
   * (default 30 s), as Elasticsearch's own InternalSettingsPlugin does, so a test index can renew its retention
   * leases sooner and a purge's expunge need not wait about 30 s for them.
   */
  @Override
  public List<org.elasticsearch.common.settings.Setting<?>> getSettings() {
    return List.of(org.elasticsearch.index.IndexService.RETENTION_LEASE_SYNC_INTERVAL_SETTING);
  }

  @Override
  public Collection<RestHandler> getRestHandlers(RestHandlersServices services, Supplier<DiscoveryNodes> nodes, Predicate<NodeFeature> features) {
    Settings settings = services.settings();
    return List.of(new MainHandler(settings.get("node.name", "elma-test"), ClusterName.CLUSTER_NAME_SETTING.get(settings).value()), new DeleteByQueryHandler());
  }

  static final class MainHandler extends BaseRestHandler {
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

  @Override
  public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
    return Map.of(
        "english", (indexSettings, env, name, settings) -> provider(name, new EnglishAnalyzer()),
        "cjk", (indexSettings, env, name, settings) -> provider(name, new CJKAnalyzer()));
  }

  private static <T extends Analyzer> AnalyzerProvider<T> provider(String name, T analyzer) {
    return new AbstractIndexAnalyzerProvider<T>(name) {
      @Override
      public T get() {
        return analyzer;
      }
    };
  }
}
