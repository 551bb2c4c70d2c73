package org.elma.esinspector;

import java.io.IOException;
import org.apache.lucene.index.FloatVectorValues;
import org.apache.lucene.search.DocIdSetIterator;

/** Lucene 9: the vector values are themselves the iterator over the documents. */
final class FloatVectors {
  /** Every vector of the field in the segment, deleted documents' included (vector values ignore deletions). */
  static void forEach(FloatVectorValues values, VectorVisitor visitor) throws IOException {
    for (int doc; (doc = values.nextDoc()) != DocIdSetIterator.NO_MORE_DOCS; ) visitor.accept(doc, values.vectorValue());
  }
}
