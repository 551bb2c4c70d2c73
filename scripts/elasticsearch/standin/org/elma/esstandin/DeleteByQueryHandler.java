package org.elma.esstandin;

import java.util.List;
import java.util.function.ToLongFunction;
import org.elasticsearch.action.bulk.BulkItemResponse;
import org.elasticsearch.action.bulk.BulkRequest;
import org.elasticsearch.action.bulk.BulkResponse;
import org.elasticsearch.action.delete.DeleteRequest;
import org.elasticsearch.action.search.SearchRequest;
import org.elasticsearch.action.search.SearchResponse;
import org.elasticsearch.action.support.IndicesOptions;
import org.elasticsearch.action.support.WriteRequest;
import org.elasticsearch.action.admin.indices.refresh.RefreshRequest;
import org.elasticsearch.client.internal.node.NodeClient;
import org.elasticsearch.common.Strings;
import org.elasticsearch.index.query.AbstractQueryBuilder;
import org.elasticsearch.index.query.QueryBuilder;
import org.elasticsearch.index.query.QueryBuilders;
import org.elasticsearch.rest.BaseRestHandler;
import org.elasticsearch.rest.RestRequest;
import org.elasticsearch.rest.RestResponse;
import org.elasticsearch.rest.RestStatus;
import org.elasticsearch.search.SearchHit;
import org.elasticsearch.search.SearchHits;
import org.elasticsearch.search.builder.SearchSourceBuilder;
import org.elasticsearch.xcontent.XContentBuilder;
import org.elasticsearch.xcontent.XContentParser;

/**
 * TEST-ONLY stand-in for `POST /{index}/_delete_by_query` of the reindex module (not on Maven Central).
 * Honoured: the body's `query`, `refresh`, `conflicts=proceed|abort`, `ignore_unavailable`,
 * `allow_no_indices`, `expand_wildcards`. Not honoured: max_docs, slices, scroll, throttling, routing,
 * wait_for_completion=false (tasks). Works in rounds of search (seq_no/primary_term) + bulk delete with
 * if_seq_no/if_primary_term, so a document changed meanwhile counts as a version conflict, as in the real action.
 */
final class DeleteByQueryHandler extends BaseRestHandler {
  private static final int BATCH = 1000;

  /** A search's total hit count (read differently on Lucene 9 and 10). */
  private final ToLongFunction<SearchHits> totalHits;

  DeleteByQueryHandler(ToLongFunction<SearchHits> totalHits) {
    this.totalHits = totalHits;
  }

  @Override
  public String getName() {
    return "elma_test_delete_by_query_action";
  }

  @Override
  public List<Route> routes() {
    return List.of(new Route(RestRequest.Method.POST, "/{index}/_delete_by_query"));
  }

  @Override
  protected RestChannelConsumer prepareRequest(RestRequest request, NodeClient client) throws java.io.IOException {
    String[] indices = Strings.splitStringByCommaToArray(request.param("index"));
    IndicesOptions options = IndicesOptions.fromRequest(request, IndicesOptions.strictExpandOpen());
    boolean proceed = "proceed".equals(request.param("conflicts", "abort"));
    boolean refresh = request.paramAsBoolean("refresh", false);
    request.param("wait_for_completion");
    request.param("timeout");
    request.param("requests_per_second");
    request.param("slices");
    request.param("scroll_size");
    QueryBuilder parsed = QueryBuilders.matchAllQuery();
    if (request.hasContentOrSourceParam()) {
      try (XContentParser parser = request.contentOrSourceParamParser()) {
        parser.nextToken();
        while (parser.nextToken() == XContentParser.Token.FIELD_NAME) {
          String field = parser.currentName();
          parser.nextToken();
          if ("query".equals(field)) parsed = AbstractQueryBuilder.parseTopLevelQuery(parser);
          else parser.skipChildren();
        }
      }
    }
    final QueryBuilder query = parsed;
    return channel -> client.threadPool().generic().execute(() -> {
      long start = System.nanoTime();
      long deleted = 0, conflicts = 0, total = 0, batches = 0;
      try {
        for (int round = 0; round < 10_000; round++) {
          client.admin().indices().refresh(new RefreshRequest(indices).indicesOptions(options)).actionGet();
          SearchRequest search = new SearchRequest(indices).indicesOptions(options)
              .source(new SearchSourceBuilder().query(query).size(BATCH).fetchSource(false).seqNoAndPrimaryTerm(true).trackTotalHits(true));
          SearchResponse found = client.search(search).actionGet();
          try {
            SearchHit[] hits = found.getHits().getHits();
            if (round == 0) total = totalHits.applyAsLong(found.getHits());
            if (hits.length == 0) break;
            batches++;
            BulkRequest bulk = new BulkRequest();
            for (SearchHit hit : hits) {
              bulk.add(new DeleteRequest(hit.getIndex(), hit.getId()).setIfSeqNo(hit.getSeqNo()).setIfPrimaryTerm(hit.getPrimaryTerm()));
            }
            BulkResponse done = client.bulk(bulk).actionGet();
            long roundConflicts = 0;
            for (BulkItemResponse item : done.getItems()) {
              if (!item.isFailed()) deleted++;
              else if (item.getFailure().getStatus() == RestStatus.CONFLICT) roundConflicts++;
              else throw new IllegalStateException("delete of " + item.getId() + " failed: " + item.getFailureMessage());
            }
            conflicts += roundConflicts;
            if (roundConflicts > 0 && !proceed) break;
            if (roundConflicts == hits.length) break; // nothing deletable left in this round
          } finally {
            found.decRef();
          }
        }
        if (refresh) client.admin().indices().refresh(new RefreshRequest(indices).indicesOptions(options)).actionGet();
        XContentBuilder b = channel.newBuilder();
        b.startObject();
        b.field("took", (System.nanoTime() - start) / 1_000_000);
        b.field("timed_out", false);
        b.field("total", Math.max(total, deleted + conflicts));
        b.field("deleted", deleted);
        b.field("batches", batches);
        b.field("version_conflicts", conflicts);
        b.field("noops", 0);
        b.startObject("retries").field("bulk", 0).field("search", 0).endObject();
        b.field("throttled_millis", 0);
        b.field("requests_per_second", -1.0);
        b.field("throttled_until_millis", 0);
        b.startArray("failures").endArray();
        b.endObject();
        channel.sendResponse(new RestResponse(conflicts > 0 && !proceed ? RestStatus.CONFLICT : RestStatus.OK, b));
      } catch (Exception e) {
        try {
          channel.sendResponse(new RestResponse(channel, e));
        } catch (Exception inner) {
          e.addSuppressed(inner);
        }
      }
    });
  }
}
