package org.elma.esstandin;

import java.util.Collection;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.lucene.analysis.Analyzer;
import org.elasticsearch.cluster.metadata.IndexNameExpressionResolver;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.common.io.stream.NamedWriteableRegistry;
import org.elasticsearch.common.settings.ClusterSettings;
import org.elasticsearch.common.settings.IndexScopedSettings;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.common.settings.SettingsFilter;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.rest.RestController;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.search.SearchHits;

/** TEST-ONLY: the stand-in (see ElmaTestStandIn) on the plugin API of Elasticsearch 8. */
public class ElmaTestStandInPlugin extends ElmaTestStandIn {
  @Override
  public Collection<RestHandler> getRestHandlers(
      Settings settings,
      NamedWriteableRegistry namedWriteableRegistry,
      RestController restController,
      ClusterSettings clusterSettings,
      IndexScopedSettings indexScopedSettings,
      SettingsFilter settingsFilter,
      IndexNameExpressionResolver indexNameExpressionResolver,
      Supplier<DiscoveryNodes> nodesInCluster,
      Predicate<NodeFeature> clusterSupportsFeature) {
    return restHandlers(settings);
  }

  @Override
  protected <T extends Analyzer> AnalyzerProvider<T> provider(String name, T analyzer) {
    return new AbstractIndexAnalyzerProvider<T>(name, Settings.EMPTY) {
      @Override
      public T get() {
        return analyzer;
      }
    };
  }

  @Override
  protected long totalHits(SearchHits hits) {
    return hits.getTotalHits() == null ? 0 : hits.getTotalHits().value;
  }
}
