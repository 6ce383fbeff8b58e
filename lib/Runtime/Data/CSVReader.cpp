//===- CSVReader.cpp - Comma-separated numeric tables ---------------------===//
//
// One example per line: the label column and the dense features (all other
// columns, in file order). A negative labelColumn counts from the end (-1 is
// the last column). The column count comes from the first line (the header
// when there is one); every line must have it.
//
//===----------------------------------------------------------------------===//

#include "Readers.h"

using namespace heterps::runtime;
using namespace heterps::runtime::data;

namespace {
class CSVReader : public TextSource {
public:
  explicit CSVReader(const DataOptions &options) : TextSource(options, "csv") {
    checkNoSparse(options, "csv");
    std::string_view line;
    bool found = false;
    while (lines.next(line))
      if (!trim(line).empty()) {
        found = true;
        break;
      }
    if (!found)
      fail("csv ", options.path, ": the file has no lines");
    columns = 1;
    for (char c : line)
      columns += c == ',';
    lines.rewind();
    if (options.csvHeader) {
      while (lines.next(line))
        if (!trim(line).empty())
          break;
    }

    labelColumn = options.labelColumn < 0 ? columns + options.labelColumn
                                          : options.labelColumn;
    if (labelColumn < 0 || labelColumn >= columns)
      fail("csv ", options.path, ": label column ", options.labelColumn,
           " is outside the ", columns, " columns of the file");
    if (columns < 2)
      fail("csv ", options.path,
           ": expected a label and at least one feature column, found ",
           columns, " column");
    if (options.denseFeatures != 0 && options.denseFeatures != columns - 1)
      fail("csv ", options.path, ": the model expects ", options.denseFeatures,
           " dense features, the file has ", columns - 1, " (", columns,
           " columns less the label)");
  }

  void rewind() override {
    TextSource::rewind();
    std::string_view line;
    if (options.csvHeader)
      while (lines.next(line))
        if (!trim(line).empty())
          break;
  }

protected:
  void resizeBatch(Batch &batch, int64_t rows) override {
    resizeLabel(batch, options, rows);
    batch.dense.resize(DType::F32, {rows, columns - 1});
    batch.sparse = Tensor();
  }

  void parseLine(std::string_view line, Batch &batch, int64_t row) override {
    float *dense = batch.dense.as<float>() + row * (columns - 1);
    int64_t column = 0;
    size_t start = 0;
    for (;;) {
      size_t comma = line.find(',', start);
      std::string_view field = trim(line.substr(
          start, comma == std::string_view::npos ? std::string_view::npos
                                                 : comma - start));
      if (field.size() >= 2 && field.front() == '"' && field.back() == '"')
        field = trim(field.substr(1, field.size() - 2));
      if (column < columns) {
        if (column == labelColumn) {
          storeLabel(batch, row, field, /*minusOneIsZero=*/false);
        } else {
          double v;
          if (!parseDouble(field, v))
            fail(where(), "csv: column ", column + 1,
                 ": expected a finite number (f32), found ", quote(field));
          dense[column < labelColumn ? column : column - 1] =
              static_cast<float>(v);
        }
      }
      ++column;
      if (comma == std::string_view::npos)
        break;
      start = comma + 1;
    }
    if (column != columns)
      fail(where(), "csv: expected ", columns,
           " comma-separated columns, found ", column);
  }

private:
  int64_t columns = 0;
  int64_t labelColumn = 0;
};
} // namespace

std::unique_ptr<DataSource> data::openCSV(const DataOptions &options) {
  return std::make_unique<CSVReader>(options);
}
