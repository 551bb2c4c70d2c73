package org.elma.esinspector;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.index.LeafReader;
import org.apache.lucene.search.DocIdSetIterator;

/** The float vectors of a field, Lucene 10 API (values by ordinal, an iterator over the documents). */
final class FloatVectors {
  interface Visitor {
    void accept(int doc, float[] vector) throws IOException;
  }

  /** Every vector of the field in the segment, deleted documents' included (vector values ignore deletions). */
  static void forEach(LeafReader leaf, String field, Visitor visitor) throws IOException {
    FloatVectorValues values = leaf.getFloatVectorValues(field);
    if (values == null) return;
    KnnVectorValues.DocIndexIterator it = values.iterator();
    for (int doc; (doc = it.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) visitor.accept(doc, values.vectorValue(it.index()));
  }
}
