// A minimal JSON writer for the client matrix's Java program (the JDK has none): maps, lists, strings,
// numbers, booleans and null.

import java.util.List;
import java.util.Map;

final class Json {
  private Json() {}

  static String write(Object value) {
    StringBuilder out = new StringBuilder();
    append(out, value);
    return out.toString();
  }

  private static void append(StringBuilder out, Object value) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Map) {
      out.append('{');
      String sep = "";
      for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
        out.append(sep);
        append(out, String.valueOf(entry.getKey()));
        out.append(':');
        append(out, entry.getValue());
        sep = ",";
      }
      out.append('}');
    } else if (value instanceof List) {
      out.append('[');
      String sep = "";
      for (Object item : (List<?>) value) {
        out.append(sep);
        append(out, item);
        sep = ",";
      }
      out.append(']');
    } else if (value instanceof Number || value instanceof Boolean) {
      out.append(value);
    } else {
      out.append('"');
      for (char c : value.toString().toCharArray()) {
        if (c == '"' || c == '\\') {
          out.append('\\').append(c);
        } else if (c < 0x20) {
          out.append(String.format("\\u%04x", (int) c));
        } else {
          out.append(c);
        }
      }
      out.append('"');
    }
  }
}
