package org.elma.esinspector;

import java.io.IOException;

/** Receives each float vector of a field with its document (FloatVectors, per Lucene version, calls it). */
interface VectorVisitor {
  void accept(int doc, float[] vector) throws IOException;
}
