package org.elma.esinspector;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.index.KnnVectorValues;
import org.apache.lucene.search.DocIdSetIterator;

/** Lucene 10: vector values are read by ordinal, through an iterator over the documents. */
final class FloatVectors {
  /** Every vector of the field in the segment, deleted documents' included (vector values ignore deletions). */
  static void forEach(FloatVectorValues values, VectorVisitor visitor) throws IOException {
    KnnVectorValues.DocIndexIterator it = values.iterator();
    for (int doc; (doc = it.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) visitor.accept(doc, values.vectorValue(it.index()));
  }
}
