package org.elma.esstandin;

import java.util.Collection;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.lucene.analysis.Analyzer;
import org.elasticsearch.cluster.node.DiscoveryNodes;
import org.elasticsearch.features.NodeFeature;
import org.elasticsearch.index.analysis.AbstractIndexAnalyzerProvider;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.search.SearchHits;

/** TEST-ONLY: the stand-in (see ElmaTestStandIn) on the plugin API of Elasticsearch 9. */
public class ElmaTestStandInPlugin extends ElmaTestStandIn {
  @Override
  public Collection<RestHandler> getRestHandlers(RestHandlersServices services, Supplier<DiscoveryNodes> nodes, Predicate<NodeFeature> features) {
    return restHandlers(services.settings());
  }

  @Override
  protected <T extends Analyzer> AnalyzerProvider<T> provider(String name, T analyzer) {
    return new AbstractIndexAnalyzerProvider<T>(name) {
      @Override
      public T get() {
        return analyzer;
      }
    };
  }

  @Override
  protected long totalHits(SearchHits hits) {
    return hits.getTotalHits() == null ? 0 : hits.getTotalHits().value();
  }
}
