package org.elma.esinspector;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.lucene.index.BinaryDocValues;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.DocValuesType;
import org.apache.lucene.index.FieldInfo;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.IndexCommit;
import org.apache.lucene.index.IndexOptions;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.index.LeafReaderContext;
import org.apache.lucene.index.NumericDocValues;
import org.apache.lucene.index.PostingsEnum;
import org.apache.lucene.index.SegmentCommitInfo;
import org.apache.lucene.index.SegmentReader;
import org.apache.lucene.index.SortedDocValues;
import org.apache.lucene.index.SortedSetDocValues;
import org.apache.lucene.index.StoredFieldVisitor;
import org.apache.lucene.index.Terms;
import org.apache.lucene.index.TermsEnum;
import org.apache.lucene.index.VectorEncoding;
import org.apache.lucene.search.DocIdSetIterator;
import org.apache.lucene.store.Directory;
import org.apache.lucene.store.FSDirectory;
import org.apache.lucene.util.Bits;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.FixedBitSet;
import org.elasticsearch.common.logging.LogConfigurator;
import org.elasticsearch.index.mapper.Uid;

/**
 * TEST-ONLY: reads the Lucene indices of an Elasticsearch shard read-only (a reader takes no write lock, so the node
 * may keep running) and reports, as JSON on stdout, what an erasure proof needs and a byte scan cannot see, since
 * stored fields are compressed: per commit point, each segment's document counts (deleted = hard + soft deletes),
 * and every place a needle still occurs, in live AND deleted documents:
 *   stored fields (decompressed by Lucene: _source, _id, _recovery_source, ...), the terms dictionary of every
 *   indexed field, sorted / sorted-set / binary doc values, and float vectors pointing the way of a given vector.
 * Only what the last flush committed is read: flush the index first.
 *
 * FloatVectors, the one loop whose Lucene API differs between Lucene 9 (Elasticsearch 8) and 10 (Elasticsearch 9),
 * comes from lucene9/ or lucene10/ beside this folder.
 *
 * Usage: java -cp inspector:lib/* org.elma.esinspector.Inspector <shard>/index ...
 * Needles on stdin, one a line: "text <needle>" (matched case-insensitively as a substring; _id values decoded
 * from Elasticsearch's encoding) or "vector <f1>,<f2>,..." (cosine of at least 0.9999). Hits name a needle by its
 * number (0-based, in input order), so the report quotes no content.
 */
public final class Inspector {
  /** More hits than this are left out (the report says so): a proof needs one hit to fail. */
  private static final int MAX_HITS = 10_000;

  private final List<String> texts = new ArrayList<>();
  private final List<float[]> vectors = new ArrayList<>();
  private final List<String> hits = new ArrayList<>();
  private boolean truncated;

  public static void main(String[] args) throws Exception {
    if (args.length == 0) {
      System.err.println("usage: Inspector <lucene index folder>... (needles on stdin)");
      System.exit(2);
    }
    // Elasticsearch's codecs log through its logging facade, which must be set up before they load.
    LogConfigurator.configureESLogging();
    Inspector inspector = new Inspector();
    inspector.readNeedles(new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)));
    StringBuilder out = new StringBuilder("{\"indices\":[");
    for (int i = 0; i < args.length; i++) out.append(i > 0 ? "," : "").append(inspector.inspectFolder(Path.of(args[i])));
    out.append("]}");
    System.out.println(out);
  }

  private void readNeedles(BufferedReader in) throws IOException {
    for (String line; (line = in.readLine()) != null; ) {
      if (line.startsWith("text ")) {
        texts.add(line.substring(5).toLowerCase(Locale.ROOT));
        vectors.add(null);
      } else if (line.startsWith("vector ")) {
        String[] parts = line.substring(7).split(",");
        float[] v = new float[parts.length];
        for (int i = 0; i < parts.length; i++) v[i] = Float.parseFloat(parts[i].trim());
        texts.add(null);
        vectors.add(v);
      } else if (!line.isBlank()) {
        throw new IllegalArgumentException("a needle line starts with \"text \" or \"vector \"");
      }
    }
  }

  /** Every commit point of one index folder; a commit deleted by the node meanwhile makes the folder be read again. */
  private String inspectFolder(Path folder) throws IOException {
    for (int attempt = 1; ; attempt++) {
      int hitsBefore = hits.size();
      try (Directory dir = FSDirectory.open(folder)) {
        StringBuilder commits = new StringBuilder();
        for (IndexCommit commit : DirectoryReader.listCommits(dir)) {
          try (DirectoryReader reader = DirectoryReader.open(commit)) {
            commits.append(commits.length() > 0 ? "," : "").append(inspectCommit(commit.getGeneration(), reader));
          }
        }
        return "{\"path\":" + json(folder.toString()) + ",\"commits\":[" + commits + "],\"hits\":[" + String.join(",", hits.subList(hitsBefore, hits.size())) + "],\"truncated\":" + truncated + "}";
      } catch (NoSuchFileException e) {
        hits.subList(hitsBefore, hits.size()).clear();
        if (attempt == 3) throw e;
      }
    }
  }

  private String inspectCommit(long generation, DirectoryReader reader) throws IOException {
    List<String> segments = new ArrayList<>();
    for (LeafReaderContext context : reader.leaves()) {
      SegmentReader leaf = (SegmentReader) context.reader();
      SegmentCommitInfo info = leaf.getSegmentInfo();
      segments.add("{\"name\":" + json(leaf.getSegmentName()) + ",\"maxDoc\":" + leaf.maxDoc() + ",\"deleted\":" + (info.getDelCount() + info.getSoftDelCount()) + ",\"softDeleted\":" + info.getSoftDelCount() + "}");
      new Segment(generation, leaf).inspect();
    }
    return "{\"generation\":" + generation + ",\"segments\":[" + String.join(",", segments) + "]}";
  }

  /** One segment of one commit: where the needles occur in it. */
  private final class Segment {
    private final long generation;
    private final LeafReader leaf;
    /** Hard deletes (not in liveDocs) and soft deletes (a value in the soft-deletes field, as Elasticsearch deletes). */
    private final FixedBitSet deleted;

    Segment(long generation, LeafReader leaf) throws IOException {
      this.generation = generation;
      this.leaf = leaf;
      this.deleted = new FixedBitSet(Math.max(1, leaf.maxDoc()));
      Bits live = leaf.getLiveDocs();
      if (live != null) for (int doc = 0; doc < leaf.maxDoc(); doc++) if (!live.get(doc)) deleted.set(doc);
      String softField = leaf.getFieldInfos().getSoftDeletesField();
      NumericDocValues soft = softField == null ? null : leaf.getNumericDocValues(softField);
      if (soft != null) for (int doc; (doc = soft.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) deleted.set(doc);
    }

    void inspect() throws IOException {
      storedFields();
      for (FieldInfo field : leaf.getFieldInfos()) {
        if (field.getIndexOptions() != IndexOptions.NONE) terms(field.name);
        if (field.getDocValuesType() != DocValuesType.NONE) docValues(field);
        if (field.getVectorDimension() > 0 && field.getVectorEncoding() == VectorEncoding.FLOAT32) vectors(field.name);
      }
    }

    private void storedFields() throws IOException {
      var stored = leaf.storedFields();
      for (int doc = 0; doc < leaf.maxDoc(); doc++) {
        List<String[]> values = new ArrayList<>();
        stored.document(doc, new StoredFieldVisitor() {
          @Override
          public Status needsField(FieldInfo field) {
            return Status.YES;
          }

          @Override
          public void binaryField(FieldInfo field, byte[] value) {
            values.add(new String[] {field.name, decode(field.name, new BytesRef(value))});
          }

          @Override
          public void stringField(FieldInfo field, String value) {
            values.add(new String[] {field.name, value});
          }
        });
        for (String[] value : values) match("stored", value[0], value[1], doc, deleted.get(doc));
      }
    }

    private void terms(String field) throws IOException {
      Terms terms = leaf.terms(field);
      if (terms == null) return;
      TermsEnum term = terms.iterator();
      PostingsEnum postings = null;
      for (BytesRef bytes; (bytes = term.next()) != null; ) {
        String text = decode(field, bytes);
        if (matching(text).isEmpty()) continue;
        postings = term.postings(postings, PostingsEnum.NONE);
        for (int doc; (doc = postings.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) match("terms", field, text, doc, deleted.get(doc));
      }
    }

    private void docValues(FieldInfo field) throws IOException {
      switch (field.getDocValuesType()) {
        case SORTED -> {
          SortedDocValues values = leaf.getSortedDocValues(field.name);
          for (int doc; (doc = values.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) {
            match("docValues", field.name, decode(field.name, values.lookupOrd(values.ordValue())), doc, deleted.get(doc));
          }
        }
        case SORTED_SET -> {
          SortedSetDocValues values = leaf.getSortedSetDocValues(field.name);
          for (int doc; (doc = values.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) {
            for (int i = 0; i < values.docValueCount(); i++) match("docValues", field.name, decode(field.name, values.lookupOrd(values.nextOrd())), doc, deleted.get(doc));
          }
        }
        case BINARY -> {
          BinaryDocValues values = leaf.getBinaryDocValues(field.name);
          for (int doc; (doc = values.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) match("docValues", field.name, decode(field.name, values.binaryValue()), doc, deleted.get(doc));
        }
        default -> {
          // Numbers hold no text.
        }
      }
    }

    private void vectors(String field) throws IOException {
      FloatVectorValues values = leaf.getFloatVectorValues(field);
      if (values == null) return;
      FloatVectors.forEach(values, (doc, stored) -> {
        for (int n = 0; n < vectors.size(); n++) {
          if (vectors.get(n) != null && cosine(vectors.get(n), stored) >= 0.9999) hit(n, "vectors", field, doc, deleted.get(doc));
        }
      });
    }

    private void match(String where, String field, String value, int doc, boolean deleted) {
      for (int n : matching(value)) hit(n, where, field, doc, deleted);
    }

    private void hit(int needle, String where, String field, int doc, boolean deleted) {
      if (hits.size() >= MAX_HITS) {
        truncated = true;
        return;
      }
      hits.add("{\"needle\":" + needle + ",\"commit\":" + generation + ",\"segment\":" + json(((SegmentReader) leaf).getSegmentName()) + ",\"in\":" + json(where) + ",\"field\":" + json(field) + ",\"doc\":" + doc + ",\"deleted\":" + deleted + "}");
    }
  }

  /** The numbers of the text needles found in `value`. */
  private List<Integer> matching(String value) {
    List<Integer> found = new ArrayList<>();
    String lower = value.toLowerCase(Locale.ROOT);
    for (int n = 0; n < texts.size(); n++) if (texts.get(n) != null && lower.contains(texts.get(n))) found.add(n);
    return found;
  }

  /** `_id` terms and stored values are encoded (Uid.encodeId: numeric, base64 or UTF-8 forms); anything else read as UTF-8. */
  private static String decode(String field, BytesRef bytes) {
    if (field.equals("_id")) return Uid.decodeId(bytes.bytes, bytes.offset, bytes.length);
    return new String(bytes.bytes, bytes.offset, bytes.length, StandardCharsets.UTF_8);
  }

  private static double cosine(float[] a, float[] b) {
    if (a.length != b.length) return 0;
    double dot = 0, na = 0, nb = 0;
    for (int i = 0; i < a.length; i++) {
      dot += a[i] * b[i];
      na += a[i] * a[i];
      nb += b[i] * b[i];
    }
    return na == 0 || nb == 0 ? 0 : dot / Math.sqrt(na * nb);
  }

  private static String json(String s) {
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      if (c == '"' || c == '\\') b.append('\\').append(c);
      else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('"').toString();
  }
}
