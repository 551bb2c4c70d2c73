package org.elma.esstandin;

import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.cjk.CJKAnalyzer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.elasticsearch.cluster.ClusterName;
import org.elasticsearch.common.settings.Setting;
import org.elasticsearch.common.settings.Settings;
import org.elasticsearch.index.IndexService;
import org.elasticsearch.index.analysis.AnalyzerProvider;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.ActionPlugin;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;
import org.elasticsearch.rest.RestHandler;
import org.elasticsearch.search.SearchHits;

/**
 * TEST-ONLY stand-in for what Maven Central lacks (the modules analysis-common, reindex and rest-root are not
 * published). Never used outside tests; the compose file keeps the official image.
 * (1) `english` and `cjk` analyzers: Lucene EnglishAnalyzer (standard tokenizer, English possessive filter,
 *     lowercase, English stop words, Porter stemmer) and CJKAnalyzer (width folding, lowercase, CJK bigrams,
 *     its default stop set). No settings (stopwords, stem_exclusion) are honoured.
 * (2) `POST /{index}/_delete_by_query` (see DeleteByQueryHandler).
 * (3) `GET /` and `HEAD /` (see MainHandler).
 * (4) registers the test setting index.soft_deletes.retention_lease.sync_interval (see getSettings).
 * The plugin class itself, ElmaTestStandInPlugin, is per major version (scripts/elasticsearch/<major>/standin):
 * it hooks these into the plugin API of that version.
 */
public abstract class ElmaTestStandIn extends Plugin implements AnalysisPlugin, ActionPlugin {
  /**
   * Registers the (otherwise test-framework-only) index setting `index.soft_deletes.retention_lease.sync_interval`
   * (default 30 s), as Elasticsearch's own InternalSettingsPlugin does, so a test index can renew its retention
   * leases sooner and a purge's expunge need not wait about 30 s for them.
   */
  @Override
  public List<Setting<?>> getSettings() {
    return List.of(IndexService.RETENTION_LEASE_SYNC_INTERVAL_SETTING);
  }

  @Override
  public Map<String, AnalysisProvider<AnalyzerProvider<? extends Analyzer>>> getAnalyzers() {
    return Map.of(
        "english", (indexSettings, env, name, settings) -> provider(name, new EnglishAnalyzer()),
        "cjk", (indexSettings, env, name, settings) -> provider(name, new CJKAnalyzer()));
  }

  /** The REST handlers (2) and (3). */
  protected final List<RestHandler> restHandlers(Settings settings) {
    return List.of(
        new MainHandler(settings.get("node.name", "elma-test"), ClusterName.CLUSTER_NAME_SETTING.get(settings).value()),
        new DeleteByQueryHandler(this::totalHits));
  }

  /** An analyzer provider that always gives this analyzer (the provider's constructor differs by version). */
  protected abstract <T extends Analyzer> AnalyzerProvider<T> provider(String name, T analyzer);

  /** The total hit count of a search (Lucene's TotalHits changed from a field to a record accessor in Lucene 10). */
  protected abstract long totalHits(SearchHits hits);
}
