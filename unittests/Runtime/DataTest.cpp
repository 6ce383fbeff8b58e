//===- DataTest.cpp - Training data readers -------------------------------===//

#include "heterps/Runtime/Data.h"
#include "heterps/Runtime/Error.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <unistd.h>

using namespace heterps::runtime;
namespace fs = std::filesystem;

namespace {

/// A per-process temporary directory, removed at exit.
class TempDir {
public:
  TempDir() {
    path = fs::temp_directory_path() /
           ("heterps-data-test-" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path path;
};

const fs::path &tempDir() {
  static TempDir dir;
  return dir.path;
}

std::string writeFile(const std::string &name, const std::string &contents) {
  std::string path = (tempDir() / name).string();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << contents;
  return path;
}

std::string writeGzFile(const std::string &name, const std::string &contents) {
  std::string path = (tempDir() / name).string();
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, contents.data(), static_cast<unsigned>(contents.size()));
  gzclose(f);
  return path;
}

/// The message of the RuntimeError `fn` throws ("" and a failure if none).
std::string errorOf(const std::function<void()> &fn) {
  try {
    fn();
  } catch (const RuntimeError &e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a RuntimeError";
  return "";
}

DataOptions plain(const std::string &format, const std::string &path) {
  DataOptions o;
  o.format = format;
  o.path = path;
  o.prefetch = false;
  return o;
}

/// All examples of one epoch, one byte string per example, in order.
std::vector<std::string> readAll(DataSource &source, int64_t batchSize) {
  std::vector<std::string> rows;
  Batch b;
  while (source.next(b, batchSize)) {
    EXPECT_GT(b.size, 0);
    EXPECT_LE(b.size, batchSize);
    for (int64_t i = 0; i < b.size; ++i) {
      std::string row;
      for (const Tensor *t : {&b.label, &b.dense, &b.sparse}) {
        if (t->empty())
          continue;
        EXPECT_EQ(t->dim(0), b.size);
        size_t bytes = t->byteSize() / b.size;
        row.append(static_cast<const char *>(t->data()) + i * bytes, bytes);
      }
      rows.push_back(row);
    }
  }
  EXPECT_EQ(b.size, 0);
  return rows;
}

float dlrm(int64_t x) {
  return static_cast<float>(std::log1p(static_cast<double>(x > 0 ? x : 0)));
}

std::string criteoLine(int label, int seed) {
  std::string line = std::to_string(label);
  for (int i = 0; i < 13; ++i)
    line += "\t" + std::to_string(seed + i);
  for (int j = 0; j < 26; ++j) {
    char hex[16];
    std::snprintf(hex, sizeof(hex), "%08x", 0x1000u * seed + j);
    line += std::string("\t") + hex;
  }
  return line + "\n";
}

//===----------------------------------------------------------------------===//
// criteo
//===----------------------------------------------------------------------===//

TEST(CriteoReader, ValuesAndBatching) {
  // Line 1: empty and negative integers, empty categoricals.
  std::string line1 = "1\t5\t\t-3";
  for (int i = 3; i < 13; ++i)
    line1 += "\t" + std::to_string(i * 10);
  line1 += "\t68fd1e64\t\tffffffff";
  for (int j = 3; j < 26; ++j)
    line1 += "\t0000000" + std::to_string(j % 10);
  // A CRLF line ending and no newline at the end of the file.
  std::string path = writeFile(
      "small.tsv", line1 + "\r\n" + criteoLine(0, 2) + criteoLine(1, 3) +
                       criteoLine(0, 4).substr(0, criteoLine(0, 4).size() - 1));
  DataOptions o = plain("criteo", path);
  o.denseFeatures = 13;
  o.sparseFeatures = 26;
  auto source = openDataSource(o);
  EXPECT_EQ(source->describe(), "criteo " + path);

  Batch b;
  ASSERT_TRUE(source->next(b, 3));
  ASSERT_EQ(b.size, 3);
  EXPECT_EQ(b.label.shape(), (Shape{3, 1}));
  EXPECT_EQ(b.dense.shape(), (Shape{3, 13}));
  EXPECT_EQ(b.sparse.shape(), (Shape{3, 26}));
  EXPECT_EQ(b.label.dtype(), DType::F32);
  EXPECT_EQ(b.dense.dtype(), DType::F32);
  EXPECT_EQ(b.sparse.dtype(), DType::I64);
  const float *label = b.label.as<float>();
  const float *dense = b.dense.as<float>();
  const int64_t *sparse = b.sparse.as<int64_t>();
  EXPECT_EQ(label[0], 1.0f);
  EXPECT_EQ(label[1], 0.0f);
  EXPECT_EQ(dense[0], dlrm(5));
  EXPECT_EQ(dense[1], 0.0f);
  EXPECT_EQ(dense[2], 0.0f);
  EXPECT_EQ(dense[3], dlrm(30));
  EXPECT_EQ(dense[12], dlrm(120));
  EXPECT_EQ(sparse[0], criteoCategoricalId(0, 0x68fd1e64));
  EXPECT_EQ(sparse[1], criteoMissingId(1));
  EXPECT_EQ(sparse[2], criteoCategoricalId(2, 0xffffffffu));
  EXPECT_EQ(sparse[25], criteoCategoricalId(25, 5));
  for (int64_t j = 0; j < 26; ++j) {
    EXPECT_GE(criteoMissingId(j), 0);
    EXPECT_NE(criteoMissingId(j), criteoCategoricalId(j, 0));
  }
  // Ids differ per column for the same hash value.
  EXPECT_NE(criteoCategoricalId(0, 7), criteoCategoricalId(1, 7));
  for (int i = 0; i < 13; ++i)
    EXPECT_EQ(dense[13 + i], dlrm(2 + i));
  for (int j = 0; j < 26; ++j)
    EXPECT_EQ(sparse[26 * 2 + j], criteoCategoricalId(j, 0x3000u + j));

  // The last, partial batch, then the end of the epoch.
  ASSERT_TRUE(source->next(b, 3));
  EXPECT_EQ(b.size, 1);
  EXPECT_EQ(b.dense.shape(), (Shape{1, 13}));
  EXPECT_EQ(b.dense.as<float>()[0], dlrm(4));
  EXPECT_EQ(b.sparse.as<int64_t>()[25], criteoCategoricalId(25, 0x4000u + 25));
  EXPECT_FALSE(source->next(b, 3));
  EXPECT_EQ(b.size, 0);
  EXPECT_FALSE(source->next(b, 3));

  source->rewind();
  ASSERT_TRUE(source->next(b, 2));
  EXPECT_EQ(b.size, 2);
  EXPECT_EQ(b.dense.as<float>()[0], dlrm(5));
}

TEST(CriteoReader, GzipAndClassLabels) {
  std::string path =
      writeGzFile("small.tsv.gz", criteoLine(1, 1) + criteoLine(0, 2));
  DataOptions o = plain("criteo", path);
  o.classLabels = true;
  auto source = openDataSource(o);
  Batch b;
  ASSERT_TRUE(source->next(b, 10));
  ASSERT_EQ(b.size, 2);
  EXPECT_EQ(b.label.shape(), (Shape{2}));
  EXPECT_EQ(b.label.as<int64_t>()[0], 1);
  EXPECT_EQ(b.label.as<int64_t>()[1], 0);
  EXPECT_EQ(b.dense.as<float>()[13], dlrm(2));
}

/// A gzip file cut short is an error, not a shorter data set: cut at a
/// flush point (every line before it decodes) and without its 8-byte
/// trailer alone.
TEST(CriteoReader, ATruncatedGzipFileIsAnError) {
  std::string lines;
  for (int i = 0; i < 200; ++i)
    lines += criteoLine(i % 2, i);
  z_stream z{};
  ASSERT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
            Z_OK);
  std::string gz(compressBound(lines.size()) + 64, '\0');
  auto deflateSome = [&](const char *data, size_t n, int flush) {
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(data));
    z.avail_in = static_cast<uInt>(n);
    z.next_out = reinterpret_cast<Bytef *>(gz.data() + z.total_out);
    z.avail_out = static_cast<uInt>(gz.size() - z.total_out);
    return deflate(&z, flush);
  };
  size_t half = lines.size() / 2;
  ASSERT_EQ(deflateSome(lines.data(), half, Z_FULL_FLUSH), Z_OK);
  size_t cut = z.total_out;
  ASSERT_EQ(deflateSome(lines.data() + half, lines.size() - half, Z_FINISH),
            Z_STREAM_END);
  size_t whole = z.total_out;
  deflateEnd(&z);

  auto read = [](const std::string &path) {
    auto source = openDataSource(plain("criteo", path));
    Batch b;
    int64_t rows = 0;
    while (source->next(b, 16))
      rows += b.size;
    return rows;
  };
  EXPECT_EQ(read(writeFile("whole.tsv.gz", gz.substr(0, whole))), 200);
  for (size_t size : {cut, whole - 8}) {
    std::string path = writeFile("cut.tsv.gz", gz.substr(0, size));
    std::string msg = errorOf([&] { read(path); });
    EXPECT_NE(msg.find(path + ": the gzip stream ends early"),
              std::string::npos)
        << msg;
  }
}

TEST(CriteoReader, Errors) {
  std::string good = criteoLine(1, 1);
  auto firstError = [](const std::string &path) {
    return errorOf([&] {
      auto s = openDataSource(plain("criteo", path));
      Batch b;
      while (s->next(b, 1)) {
      }
    });
  };

  std::string path = writeFile("cols.tsv", good + "1\t2\t3\n");
  std::string msg = firstError(path);
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 40"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 3"), std::string::npos) << msg;

  std::string bad = good;
  bad.replace(bad.find('\t', 2) + 1, 1, "x");
  path = writeFile("int.tsv", good + good + bad);
  msg = firstError(path);
  EXPECT_NE(msg.find(path + ":3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("I2"), std::string::npos) << msg;

  bad = good.substr(0, good.size() - 1) + "zz\n"; // C26 = "000010" "19zz"
  path = writeFile("hex.tsv", bad);
  msg = firstError(path);
  EXPECT_NE(msg.find(path + ":1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("C26"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hex"), std::string::npos) << msg;

  path = writeFile("label.tsv", "2" + good.substr(1));
  msg = firstError(path);
  EXPECT_NE(msg.find(path + ":1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("label 0 or 1, found '2'"), std::string::npos) << msg;

  DataOptions o = plain("criteo", writeFile("ok.tsv", good));
  o.denseFeatures = 10;
  msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("10 dense"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 13"), std::string::npos) << msg;
  o.denseFeatures = 0;
  o.sparseFeatures = 8;
  msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("8 sparse"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 26"), std::string::npos) << msg;

  std::string missing = (tempDir() / "missing.tsv").string();
  msg = errorOf([&] { openDataSource(plain("criteo", missing)); });
  EXPECT_NE(msg.find(missing), std::string::npos) << msg;
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// libsvm
//===----------------------------------------------------------------------===//

TEST(LibSVMReader, Values) {
  std::string path = writeFile("a.svm", "+1 1:0.5 3:-2\n"
                                        "-1 2:4 # a comment\n"
                                        "\n"
                                        "1 qid:3 4:1e-3\n");
  DataOptions o = plain("libsvm", path);
  o.denseFeatures = 4;
  auto source = openDataSource(o);
  Batch b;
  // A batch that another source filled loses the column libsvm lacks.
  b.sparse = Tensor(DType::I64, {2, 3});
  ASSERT_TRUE(source->next(b, 2));
  ASSERT_EQ(b.size, 2);
  EXPECT_EQ(b.dense.shape(), (Shape{2, 4}));
  EXPECT_TRUE(b.sparse.empty());
  const float *d = b.dense.as<float>();
  std::vector<float> expect = {0.5f, 0, -2, 0, 0, 4, 0, 0};
  EXPECT_EQ(std::vector<float>(d, d + 8), expect);
  EXPECT_EQ(b.label.as<float>()[0], 1.0f);
  EXPECT_EQ(b.label.as<float>()[1], 0.0f);
  // The blank line is skipped; the reused buffer is cleared per row.
  ASSERT_TRUE(source->next(b, 2));
  ASSERT_EQ(b.size, 1);
  d = b.dense.as<float>();
  EXPECT_EQ(std::vector<float>(d, d + 4),
            (std::vector<float>{0, 0, 0, 0.001f}));
  EXPECT_FALSE(source->next(b, 2));

  // Without a width from the model the widest index is taken.
  o.denseFeatures = 0;
  source = openDataSource(o);
  ASSERT_TRUE(source->next(b, 8));
  EXPECT_EQ(b.dense.shape(), (Shape{3, 4}));
}

TEST(LibSVMReader, ClassLabelsAndErrors) {
  std::string path = writeFile("c.svm", "0 1:1\n2 2:1\n1 1:3\n");
  DataOptions o = plain("libsvm", path);
  o.denseFeatures = 2;
  o.classLabels = true;
  o.numClasses = 3;
  auto source = openDataSource(o);
  Batch b;
  ASSERT_TRUE(source->next(b, 8));
  EXPECT_EQ(b.label.shape(), (Shape{3}));
  EXPECT_EQ(
      std::vector<int64_t>(b.label.as<int64_t>(), b.label.as<int64_t>() + 3),
      (std::vector<int64_t>{0, 2, 1}));

  o.numClasses = 2;
  source = openDataSource(o);
  std::string msg = errorOf([&] { source->next(b, 8); });
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("[0, 2)"), std::string::npos) << msg;

  path = writeFile("wide.svm", "1 1:1\n0 7:1\n");
  o = plain("libsvm", path);
  o.denseFeatures = 4;
  source = openDataSource(o);
  msg = errorOf([&] { source->next(b, 8); });
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("index 7"), std::string::npos) << msg;
  EXPECT_NE(msg.find("4 dense"), std::string::npos) << msg;

  path = writeFile("zero.svm", "1 0:1\n");
  msg = errorOf([&] { openDataSource(plain("libsvm", path)); });
  EXPECT_NE(msg.find(path + ":1:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1-based"), std::string::npos) << msg;

  path = writeFile("token.svm", "1 1:1\n1 1:1 oops\n");
  msg = errorOf([&] { openDataSource(plain("libsvm", path)); });
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'oops'"), std::string::npos) << msg;

  path = writeFile("repeat.svm", "1 1:1 3:1\n1 3:1 3:2\n");
  msg = errorOf([&] { openDataSource(plain("libsvm", path)); });
  EXPECT_NE(msg.find(path + ":2: libsvm: feature index 3 after 3: indices "
                            "must ascend, each at most once"),
            std::string::npos)
      << msg;

  // NaN, infinities and values beyond f32 are refused, as labels too.
  for (const char *line :
       {"1 1:nan\n", "1 1:inf\n", "1 1:1e39\n", "nan 1:1\n"}) {
    path = writeFile("nonfinite.svm", line);
    msg = errorOf([&] {
      auto s = openDataSource(plain("libsvm", path));
      Batch batch;
      s->next(batch, 4);
    });
    EXPECT_NE(msg.find("expected a finite number (f32)"), std::string::npos)
        << line << msg;
  }
}

//===----------------------------------------------------------------------===//
// csv
//===----------------------------------------------------------------------===//

TEST(CSVReader, HeaderAndLabelColumn) {
  std::string path =
      writeFile("a.csv", "f0,label,f1\n1.5, 1 ,-2\n\"3\",0,4e2\n");
  DataOptions o = plain("csv", path);
  o.csvHeader = true;
  o.labelColumn = 1;
  o.denseFeatures = 2;
  auto source = openDataSource(o);
  Batch b;
  ASSERT_TRUE(source->next(b, 1));
  ASSERT_EQ(b.size, 1);
  EXPECT_EQ(b.dense.as<float>()[0], 1.5f);
  EXPECT_EQ(b.dense.as<float>()[1], -2.0f);
  EXPECT_EQ(b.label.as<float>()[0], 1.0f);
  ASSERT_TRUE(source->next(b, 1));
  EXPECT_EQ(b.dense.as<float>()[0], 3.0f);
  EXPECT_EQ(b.dense.as<float>()[1], 400.0f);
  EXPECT_EQ(b.label.as<float>()[0], 0.0f);
  EXPECT_FALSE(source->next(b, 1));
  // rewind skips the header again.
  source->rewind();
  ASSERT_TRUE(source->next(b, 5));
  EXPECT_EQ(b.size, 2);
  EXPECT_EQ(b.dense.as<float>()[0], 1.5f);

  // The label as the last column, counted from the end.
  o = plain("csv", writeFile("b.csv", "1,2,3\n4,5,6\n"));
  o.labelColumn = -1;
  source = openDataSource(o);
  ASSERT_TRUE(source->next(b, 5));
  EXPECT_EQ(b.label.as<float>()[1], 6.0f);
  EXPECT_EQ(b.dense.as<float>()[2], 4.0f);
  EXPECT_EQ(b.dense.as<float>()[3], 5.0f);
}

TEST(CSVReader, Errors) {
  std::string path = writeFile("bad.csv", "1,2,3\n4,5\n");
  auto source = openDataSource(plain("csv", path));
  Batch b;
  std::string msg = errorOf([&] { source->next(b, 5); });
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 2"), std::string::npos) << msg;

  path = writeFile("nan.csv", "1,2,3\n4,abc,6\n");
  source = openDataSource(plain("csv", path));
  msg = errorOf([&] { source->next(b, 5); });
  EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'abc'"), std::string::npos) << msg;

  // NaN, infinities and values beyond f32 train on to NaN weights: refused,
  // in features and labels alike.
  for (const char *row :
       {"4,nan,6\n", "4,-inf,6\n", "4,1e39,6\n", "nan,5,6\n", "4,5,NaN\n"}) {
    path = writeFile("nonfinite.csv", std::string("1,2,3\n") + row);
    source = openDataSource(plain("csv", path));
    msg = errorOf([&] { source->next(b, 5); });
    EXPECT_NE(msg.find(path + ":2:"), std::string::npos) << row << msg;
    EXPECT_NE(msg.find("expected a finite number (f32)"), std::string::npos)
        << row << msg;
  }

  // The bce loss's labels are probabilities; other losses take any label.
  path = writeFile("labels.csv", "0,1,2\n0.25,1,2\n7,1,2\n");
  DataOptions bce = plain("csv", path);
  bce.unitLabels = true;
  source = openDataSource(bce);
  msg = errorOf([&] { source->next(b, 5); });
  EXPECT_NE(msg.find(path + ":3: csv: expected a label in [0, 1] (the "
                            "plan's loss is bce), found '7'"),
            std::string::npos)
      << msg;
  source = openDataSource(plain("csv", path));
  ASSERT_TRUE(source->next(b, 5));
  EXPECT_EQ(b.label.as<float>()[2], 7.0f);

  DataOptions o = plain("csv", path);
  o.denseFeatures = 5;
  msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("5 dense"), std::string::npos) << msg;
  EXPECT_NE(msg.find("has 2"), std::string::npos) << msg;
  o.denseFeatures = 0;
  o.sparseFeatures = 3;
  msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("3 sparse"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// idx
//===----------------------------------------------------------------------===//

std::string idxHeader(uint8_t ndims, std::vector<uint32_t> dims) {
  std::string h = {0, 0, 8, static_cast<char>(ndims)};
  for (uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8)
      h += static_cast<char>((d >> s) & 0xff);
  return h;
}

TEST(IDXReader, TinyFiles) {
  // 3 images of 2x2.
  std::string pixels = {0, 51, 102, static_cast<char>(255), 1, 2, 3, 4, 5,
                        6, 7,  8};
  for (bool gz : {false, true}) {
    auto write = gz ? writeGzFile : writeFile;
    std::string ext = gz ? ".gz" : "";
    std::string images =
        write("tiny-images-idx3-ubyte" + ext, idxHeader(3, {3, 2, 2}) + pixels);
    write("tiny-labels-idx1-ubyte" + ext,
          idxHeader(1, {3}) + std::string{7, 0, 9});
    DataOptions o = plain("idx", images);
    o.classLabels = true;
    o.numClasses = 10;
    o.denseFeatures = 4;
    auto source = openDataSource(o);
    Batch b;
    ASSERT_TRUE(source->next(b, 2));
    ASSERT_EQ(b.size, 2);
    EXPECT_EQ(b.dense.shape(), (Shape{2, 4}));
    EXPECT_EQ(b.label.shape(), (Shape{2}));
    const float *d = b.dense.as<float>();
    EXPECT_EQ(d[0], 0.0f);
    EXPECT_EQ(d[1], 51 / 255.0f);
    EXPECT_EQ(d[3], 1.0f);
    EXPECT_EQ(d[4], 1 / 255.0f);
    EXPECT_EQ(b.label.as<int64_t>()[0], 7);
    EXPECT_EQ(b.label.as<int64_t>()[1], 0);
    ASSERT_TRUE(source->next(b, 2));
    ASSERT_EQ(b.size, 1);
    EXPECT_EQ(b.label.as<int64_t>()[0], 9);
    EXPECT_EQ(b.dense.as<float>()[3], 8 / 255.0f);
    EXPECT_FALSE(source->next(b, 2));
    source->rewind();
    ASSERT_TRUE(source->next(b, 2));
    EXPECT_EQ(b.label.as<int64_t>()[0], 7);

    // f32 labels without classLabels.
    o.classLabels = false;
    source = openDataSource(o);
    ASSERT_TRUE(source->next(b, 3));
    EXPECT_EQ(b.label.shape(), (Shape{3, 1}));
    EXPECT_EQ(b.label.as<float>()[2], 9.0f);

    // A bce plan's labels are 0 or 1.
    o.classLabels = false;
    o.unitLabels = true;
    std::string unit = errorOf([&] { openDataSource(o); });
    EXPECT_NE(unit.find("label 7 of example 0 is not in [0, 1] (the plan's "
                        "loss is bce)"),
              std::string::npos)
        << unit;
    o.unitLabels = false;

    // Labels must fit the classes.
    o.classLabels = true;
    o.numClasses = 8;
    std::string msg = errorOf([&] { openDataSource(o); });
    EXPECT_NE(msg.find("label 9 of example 2"), std::string::npos) << msg;
  }
}

TEST(IDXReader, Errors) {
  std::string images = writeFile("e1-images-idx3-ubyte",
                                 idxHeader(3, {2, 2, 2}) + std::string(8, 1));
  writeFile("e1-labels-idx1-ubyte", idxHeader(1, {3}) + std::string(3, 1));
  std::string msg = errorOf([&] { openDataSource(plain("idx", images)); });
  EXPECT_NE(msg.find("expected 2 labels"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 3"), std::string::npos) << msg;

  images = writeFile("e2-images-idx3-ubyte",
                     idxHeader(3, {2, 2, 2}) + std::string(7, 1));
  msg = errorOf([&] { openDataSource(plain("idx", images)); });
  EXPECT_NE(msg.find(images), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 8 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 7"), std::string::npos) << msg;

  images =
      writeFile("e3-images-idx3-ubyte", std::string("\x00\x00\x08\x01xxxx", 8));
  msg = errorOf([&] { openDataSource(plain("idx", images)); });
  EXPECT_NE(msg.find("0x00000803"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 0x00000801"), std::string::npos) << msg;

  images = writeFile("e4-images-idx3-ubyte",
                     idxHeader(3, {1, 2, 2}) + std::string(4, 1));
  std::string labels = (tempDir() / "e4-labels-idx1-ubyte").string();
  msg = errorOf([&] { openDataSource(plain("idx", images)); });
  EXPECT_NE(msg.find(labels + ": cannot open"), std::string::npos) << msg;

  msg = errorOf([&] { openDataSource(plain("idx", "/tmp/pixels.bin")); });
  EXPECT_NE(msg.find("images-idx3"), std::string::npos) << msg;
}

TEST(IDXReader, FashionMNIST) {
  const std::string path =
      "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz";
  if (!fs::exists(path))
    GTEST_SKIP() << path << " is absent (Debian's dataset-fashion-mnist)";
  DataOptions o = plain("idx", path);
  o.classLabels = true;
  o.numClasses = 10;
  o.denseFeatures = 28 * 28;
  auto source = openDataSource(o);
  Batch b;
  int64_t total = 0;
  std::vector<int64_t> perClass(10);
  bool first = true;
  while (source->next(b, 4096)) {
    EXPECT_EQ(b.dense.dim(1), 784);
    if (first) {
      // The first labels of the training set: ankle boot, t-shirt, t-shirt.
      EXPECT_EQ(b.label.as<int64_t>()[0], 9);
      EXPECT_EQ(b.label.as<int64_t>()[1], 0);
      EXPECT_EQ(b.label.as<int64_t>()[2], 0);
      EXPECT_EQ(b.label.as<int64_t>()[3], 3);
      const float *d = b.dense.as<float>();
      EXPECT_EQ(*std::min_element(d, d + 784), 0.0f);
      EXPECT_EQ(*std::max_element(d, d + 784), 1.0f);
      first = false;
    }
    for (int64_t i = 0; i < b.size; ++i) {
      int64_t l = b.label.as<int64_t>()[i];
      ASSERT_GE(l, 0);
      ASSERT_LE(l, 9);
      ++perClass[l];
    }
    total += b.size;
  }
  EXPECT_EQ(total, 60000);
  for (int64_t n : perClass)
    EXPECT_EQ(n, 6000);
}

//===----------------------------------------------------------------------===//
// synthetic
//===----------------------------------------------------------------------===//

DataOptions syntheticOptions(int64_t examples, uint64_t seed) {
  DataOptions o;
  o.format = "synthetic";
  o.prefetch = false;
  o.denseFeatures = 8;
  o.sparseFeatures = 4;
  o.syntheticExamples = examples;
  o.syntheticVocab = 100;
  o.seed = seed;
  return o;
}

TEST(SyntheticSource, DeterministicPerSeed) {
  auto a = openDataSource(syntheticOptions(3000, 7));
  auto b = openDataSource(syntheticOptions(3000, 7));
  auto c = openDataSource(syntheticOptions(3000, 8));
  std::vector<std::string> ra = readAll(*a, 128), rb = readAll(*b, 1000),
                           rc = readAll(*c, 128);
  EXPECT_EQ(ra.size(), 3000u);
  EXPECT_EQ(ra, rb);
  EXPECT_NE(ra, rc);
  // rewind replays the same examples.
  a->rewind();
  EXPECT_EQ(readAll(*a, 77), ra);
}

/// The cache that replays an epoch grows as rows are drawn: epochs read in
/// batches that straddle its growth, or rewound half-way through the first,
/// are the examples a fresh source draws.
TEST(SyntheticSource, EpochsReplayAcrossTheCachesGrowth) {
  std::vector<std::string> drawn =
      readAll(*openDataSource(syntheticOptions(20000, 4)), 20000);
  ASSERT_EQ(drawn.size(), 20000u);
  auto s = openDataSource(syntheticOptions(20000, 4));
  Batch b;
  for (int i = 0; i < 97; ++i)
    ASSERT_TRUE(s->next(b, 61));
  s->rewind();
  EXPECT_EQ(readAll(*s, 777), drawn);
  s->rewind();
  EXPECT_EQ(readAll(*s, 4096), drawn);
  s->rewind();
  EXPECT_EQ(readAll(*s, 1), drawn);
}

TEST(SyntheticSource, IdsAreSkewedAndInRange) {
  auto s = openDataSource(syntheticOptions(4000, 1));
  Batch b;
  std::vector<int64_t> counts(100);
  while (s->next(b, 1000)) {
    EXPECT_EQ(b.sparse.shape(), (Shape{b.size, 4}));
    for (int64_t i = 0; i < b.size * 4; ++i) {
      int64_t id = b.sparse.as<int64_t>()[i];
      ASSERT_GE(id, 0);
      ASSERT_LT(id, 100);
      ++counts[id];
    }
  }
  // Log-uniform: id 0 about 15% of draws, the tail well under 1%.
  EXPECT_GT(counts[0], 10 * counts[90]);
  EXPECT_GT(counts[99] + counts[98] + counts[97], 0);
}

TEST(SyntheticSource, LabelsAreLearnable) {
  const int64_t n = 20000, d = 8;
  auto s = openDataSource(syntheticOptions(n, 3));
  std::vector<float> x;
  std::vector<float> y;
  Batch b;
  while (s->next(b, 4096)) {
    x.insert(x.end(), b.dense.as<float>(), b.dense.as<float>() + b.size * d);
    y.insert(y.end(), b.label.as<float>(), b.label.as<float>() + b.size);
  }
  ASSERT_EQ(static_cast<int64_t>(y.size()), n);
  double mean = 0;
  for (float v : y) {
    ASSERT_TRUE(v == 0.0f || v == 1.0f);
    mean += v;
  }
  mean /= n;
  EXPECT_GT(mean, 0.1);
  EXPECT_LT(mean, 0.9);

  // Logistic regression on the dense features only, by SGD.
  std::vector<double> w(d + 1);
  auto predict = [&](int64_t i) {
    double z = w[d];
    for (int64_t k = 0; k < d; ++k)
      z += w[k] * x[i * d + k];
    return 1.0 / (1.0 + std::exp(-z));
  };
  for (int epoch = 0; epoch < 3; ++epoch)
    for (int64_t i = 0; i < n; ++i) {
      double g = predict(i) - y[i];
      for (int64_t k = 0; k < d; ++k)
        w[k] -= 0.05 * g * x[i * d + k];
      w[d] -= 0.05 * g;
    }
  double loss = 0;
  for (int64_t i = 0; i < n; ++i) {
    double p = std::clamp(predict(i), 1e-7, 1 - 1e-7);
    loss -= y[i] ? std::log(p) : std::log(1 - p);
  }
  loss /= n;
  double baseline = -(mean * std::log(mean) + (1 - mean) * std::log(1 - mean));
  EXPECT_LT(loss, baseline - 0.05) << "baseline " << baseline;
}

TEST(SyntheticSource, MultiClass) {
  DataOptions o = syntheticOptions(5000, 2);
  o.classLabels = true;
  o.numClasses = 5;
  auto s = openDataSource(o);
  Batch b;
  std::vector<int64_t> counts(5);
  while (s->next(b, 1000)) {
    EXPECT_EQ(b.label.shape(), (Shape{b.size}));
    for (int64_t i = 0; i < b.size; ++i) {
      int64_t l = b.label.as<int64_t>()[i];
      ASSERT_GE(l, 0);
      ASSERT_LT(l, 5);
      ++counts[l];
    }
  }
  for (int64_t c : counts)
    EXPECT_GT(c, 5000 / 5 / 4);

  o.denseFeatures = o.sparseFeatures = 0;
  std::string msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("synthetic"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// prefetch and shuffle
//===----------------------------------------------------------------------===//

TEST(DataSourceWrapper, PrefetchKeepsOrder) {
  DataOptions o = syntheticOptions(5000, 11);
  std::vector<std::string> expect = readAll(*openDataSource(o), 1000);
  o.prefetch = true;
  auto s = openDataSource(o);
  EXPECT_EQ(s->describe(), "synthetic 5000 examples, seed 11");
  EXPECT_EQ(readAll(*s, 77), expect);
  s->rewind();
  EXPECT_EQ(readAll(*s, 3000), expect);
  // A rewind mid-epoch starts over.
  s->rewind();
  Batch b;
  ASSERT_TRUE(s->next(b, 10));
  s->rewind();
  EXPECT_EQ(readAll(*s, 500), expect);
}

TEST(DataSourceWrapper, ShuffleYieldsTheSameMultiset) {
  DataOptions o = syntheticOptions(5000, 12);
  std::vector<std::string> expect = readAll(*openDataSource(o), 1000);
  std::multiset<std::string> expectSet(expect.begin(), expect.end());
  o.shuffleBuffer = 1000;
  for (bool prefetch : {false, true}) {
    o.prefetch = prefetch;
    auto s = openDataSource(o);
    EXPECT_NE(s->describe().find("shuffle buffer 1000"), std::string::npos);
    std::vector<std::string> first = readAll(*s, 77);
    EXPECT_EQ(std::multiset<std::string>(first.begin(), first.end()),
              expectSet);
    EXPECT_NE(first, expect);
    s->rewind();
    std::vector<std::string> second = readAll(*s, 333);
    EXPECT_EQ(std::multiset<std::string>(second.begin(), second.end()),
              expectSet);
    // Each epoch has its own order.
    EXPECT_NE(second, first);
  }
  // The order is a function of the seed, with or without prefetching.
  o.prefetch = false;
  std::vector<std::string> a = readAll(*openDataSource(o), 100);
  o.prefetch = true;
  EXPECT_EQ(readAll(*openDataSource(o), 100), a);

  // A buffer larger than the epoch is a full shuffle.
  o.shuffleBuffer = 100000;
  std::vector<std::string> all = readAll(*openDataSource(o), 512);
  EXPECT_EQ(std::multiset<std::string>(all.begin(), all.end()), expectSet);
}

TEST(DataSourceWrapper, ShuffleOnAFile) {
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += std::to_string(i % 2) + "," + std::to_string(i) + "\n";
  DataOptions o = plain("csv", writeFile("order.csv", text));
  o.shuffleBuffer = 256;
  o.prefetch = true;
  auto s = openDataSource(o);
  std::vector<float> seen;
  Batch b;
  while (s->next(b, 100))
    seen.insert(seen.end(), b.dense.as<float>(), b.dense.as<float>() + b.size);
  ASSERT_EQ(seen.size(), 3000u);
  std::vector<float> sorted = seen;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 3000; ++i)
    ASSERT_EQ(sorted[i], float(i));
  EXPECT_FALSE(std::is_sorted(seen.begin(), seen.end()));
}

/// A batch size beyond the data gives one batch of all its examples. The
/// readers that assemble a batch grow it as examples arrive; they shaped it
/// for the batch size first, so 2^40 rows ran out of memory (and 10^8 rows
/// of the example CTR model zeroed 14 GB for 65,536 examples).
TEST(DataSourceWrapper, ABatchLargerThanTheDataHoldsTheData) {
  constexpr int64_t kHuge = int64_t(1) << 40;
  DataOptions o = syntheticOptions(5000, 13);
  std::vector<std::string> expect = readAll(*openDataSource(o), 1000);
  std::multiset<std::string> expectSet(expect.begin(), expect.end());
  // So does a shuffle buffer (2^40 examples were allocated at once).
  for (bool prefetch : {false, true})
    for (int64_t shuffle : {int64_t(0), int64_t(1000), kHuge}) {
      o.prefetch = prefetch;
      o.shuffleBuffer = shuffle;
      std::vector<std::string> all = readAll(*openDataSource(o), kHuge);
      if (shuffle)
        EXPECT_EQ(std::multiset<std::string>(all.begin(), all.end()),
                  expectSet);
      else
        EXPECT_EQ(all, expect);
    }
  // Text files: one, a list of two, and one read as a shard of two.
  std::string first, second;
  for (int i = 0; i < 3000; ++i)
    (i < 1800 ? first : second) +=
        std::to_string(i % 2) + "," + std::to_string(i) + "\n";
  std::string a = writeFile("huge-batch-a.csv", first),
              b = writeFile("huge-batch-b.csv", second);
  for (const std::string &path : {a, a + "," + b}) {
    DataOptions c = plain("csv", path);
    std::vector<std::string> rows = readAll(*openDataSource(c), 100);
    ASSERT_EQ(rows.size(), path == a ? 1800u : 3000u);
    EXPECT_EQ(readAll(*openDataSource(c), kHuge), rows);
    c.shardCount = 2;
    c.shardIndex = 1;
    rows = readAll(*openDataSource(c), 100);
    ASSERT_EQ(rows.size(), path == a ? 900u : 1200u);
    EXPECT_EQ(readAll(*openDataSource(c), kHuge), rows);
  }
}

TEST(DataSourceWrapper, BackgroundErrorSurfacesInNext) {
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += i == 2500 ? "1,oops\n" : "1," + std::to_string(i) + "\n";
  std::string path = writeFile("late-error.csv", text);
  DataOptions o = plain("csv", path);
  o.prefetch = true;
  for (int64_t shuffle : {0, 100}) {
    o.shuffleBuffer = shuffle;
    auto s = openDataSource(o);
    Batch b;
    int64_t rows = 0;
    std::string msg = errorOf([&] {
      while (s->next(b, 100))
        rows += b.size;
    });
    EXPECT_NE(msg.find(path + ":2501:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'oops'"), std::string::npos) << msg;
    // The reader's batch holding the bad line is lost with it.
    EXPECT_LE(rows, 2500);
    // The error stays until rewind, which reads the file again.
    EXPECT_THROW(s->next(b, 100), RuntimeError);
    s->rewind();
    EXPECT_TRUE(s->next(b, 100));
  }
}

TEST(DataSourceWrapper, DestroyMidEpochDoesNotHang) {
  DataOptions o = syntheticOptions(1 << 30, 5);
  o.shuffleBuffer = 4096;
  o.prefetch = true;
  auto start = std::chrono::steady_clock::now();
  {
    auto s = openDataSource(o);
    Batch b;
    ASSERT_TRUE(s->next(b, 256));
    EXPECT_EQ(b.size, 256);
  }
  { auto s = openDataSource(o); } // Never read from.
  {
    auto s = openDataSource(o);
    Batch b;
    ASSERT_TRUE(s->next(b, 10));
    s->rewind(); // Also stops a producer blocked on a full queue.
    ASSERT_TRUE(s->next(b, 10));
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(DataSourceWrapper, Errors) {
  DataOptions o = syntheticOptions(10, 1);
  o.format = "parquet";
  std::string msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("'parquet'"), std::string::npos) << msg;
  o.format = "synthetic";
  auto s = openDataSource(o);
  Batch b;
  msg = errorOf([&] { s->next(b, 0); });
  EXPECT_NE(msg.find("batch size"), std::string::npos) << msg;
}

/// Every example's first dense value, in the order `source` gives them.
std::vector<float> firstValues(DataSource &source, int64_t batchSize) {
  std::vector<float> values;
  Batch b;
  while (source.next(b, batchSize))
    for (int64_t r = 0; r < b.size; ++r)
      values.push_back(b.dense.as<float>()[r * b.dense.dim(1)]);
  return values;
}

TEST(DataLanes, ShardsTogetherHoldTheStreamOnce) {
  DataOptions o = syntheticOptions(1000, 3);
  std::vector<float> all = firstValues(*openDataSource(o), 64);
  ASSERT_EQ(all.size(), 1000u);
  for (int64_t count : {2, 3}) {
    std::vector<float> joined(all.size(), -1);
    for (int64_t index = 0; index < count; ++index) {
      DataOptions shard = o;
      shard.shardIndex = index;
      shard.shardCount = count;
      std::vector<float> mine = firstValues(*openDataSource(shard), 64);
      for (size_t i = 0; i < mine.size(); ++i)
        joined[index + i * count] = mine[i];
    }
    EXPECT_EQ(joined, all) << count << " shards";
  }
  o.shardIndex = 2;
  o.shardCount = 2;
  std::string msg = errorOf([&] { openDataSource(o); });
  EXPECT_NE(msg.find("data shard 2 of 2 does not exist"), std::string::npos)
      << msg;
}

TEST(DataLanes, StepsInterleaveTheLanesByMicroBatch) {
  // 2 lanes, 4 micro-batches of a 10-row step: 3, 3, 2, 2 rows; lane 0
  // gives micro-batches 0 and 2 (5 rows), lane 1 micro-batches 1 and 3.
  DataOptions o = syntheticOptions(40, 5);
  std::vector<float> lane[2];
  for (int l = 0; l < 2; ++l) {
    DataOptions shard = o;
    shard.shardIndex = l;
    shard.shardCount = 2;
    lane[l] = firstValues(*openDataSource(shard), 64);
  }
  LaneLayout layout;
  layout.lanes = 2;
  layout.microBatches = 4;
  layout.read = {true, true};
  auto source = openLaneSource(o, layout);
  Batch b;
  ASSERT_TRUE(source->next(b, 10));
  std::vector<float> got;
  for (int64_t r = 0; r < b.size; ++r)
    got.push_back(b.dense.as<float>()[r * b.dense.dim(1)]);
  std::vector<float> expected = {lane[0][0], lane[0][1], lane[0][2], lane[1][0],
                                 lane[1][1], lane[1][2], lane[0][3], lane[0][4],
                                 lane[1][3], lane[1][4]};
  EXPECT_EQ(got, expected);
  EXPECT_EQ(b.present, std::vector<char>(10, 1));
  // Lane 1 read elsewhere: its rows are zeros and marked absent.
  layout.read = {true, false};
  source = openLaneSource(o, layout);
  ASSERT_TRUE(source->next(b, 10));
  EXPECT_EQ(b.present, (std::vector<char>{1, 1, 1, 0, 0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(b.dense.as<float>()[3 * b.dense.dim(1)], 0.0f);
  EXPECT_EQ(b.dense.as<float>()[6 * b.dense.dim(1)], lane[0][3]);
  // Each lane has 20 examples, 5 per step: 4 steps, then the epoch ends.
  int steps = 1;
  while (source->next(b, 10))
    ++steps;
  EXPECT_EQ(steps, 4);
  layout.microBatches = 3;
  std::string msg = errorOf([&] { openLaneSource(o, layout); });
  EXPECT_NE(msg.find("3 micro-batches per step do not divide into 2 lanes"),
            std::string::npos)
      << msg;
}

TEST(DataFiles, ListsAndPatterns) {
  fs::path dir = tempDir() / "files";
  fs::create_directories(dir);
  for (int f = 0; f < 3; ++f) {
    std::ofstream out(dir / ("part-" + std::to_string(f) + ".svm"));
    for (int i = 0; i < 5; ++i)
      out << (i % 2) << " 1:" << f * 10 + i << "\n";
  }
  std::vector<std::string> paths = expandDataPaths(
      (dir / "part-*.svm").string() + "," + (dir / "part-0.svm").string());
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_EQ(fs::path(paths[0]).filename(), "part-0.svm");
  EXPECT_EQ(fs::path(paths[2]).filename(), "part-2.svm");
  EXPECT_EQ(fs::path(paths[3]).filename(), "part-0.svm");
  DataOptions o;
  o.format = "libsvm";
  o.prefetch = false;
  o.denseFeatures = 1;
  o.path = (dir / "part-*.svm").string();
  std::vector<float> values = firstValues(*openDataSource(o), 4);
  EXPECT_EQ(values, (std::vector<float>{0, 1, 2, 3, 4, 10, 11, 12, 13, 14, 20,
                                        21, 22, 23, 24}));
  // Files 0 and 2 make shard 0 of 2.
  o.shardCount = 2;
  values = firstValues(*openDataSource(o), 4);
  EXPECT_EQ(values, (std::vector<float>{0, 1, 2, 3, 4, 20, 21, 22, 23, 24}));
  std::string msg =
      errorOf([&] { expandDataPaths((dir / "none-*.svm").string()); });
  EXPECT_NE(msg.find("matches no file"), std::string::npos) << msg;
}

//===----------------------------------------------------------------------===//
// TensorProto
//===----------------------------------------------------------------------===//

TEST(TensorProto, ReadsONNXTestData) {
  const std::string path = "/usr/share/libonnx-testdata/data/node/test_relu/"
                           "test_data_set_0/input_0.pb";
  if (!fs::exists(path))
    GTEST_SKIP() << path << " is absent (Debian's libonnx-testdata)";
  std::string name;
  Tensor x = readTensorProto(path, &name);
  EXPECT_EQ(name, "x");
  EXPECT_EQ(x.dtype(), DType::F32);
  EXPECT_EQ(x.shape(), (Shape{3, 4, 5}));
  // The expected output is relu of the input.
  Tensor y = readTensorProto(path.substr(0, path.size() - 10) + "output_0.pb");
  ASSERT_EQ(y.shape(), x.shape());
  for (int64_t i = 0; i < x.numElements(); ++i)
    EXPECT_EQ(y.as<float>()[i], std::max(x.as<float>()[i], 0.0f));
}

TEST(TensorProto, RoundTrip) {
  for (DType t : {DType::F32, DType::F64, DType::I64, DType::I32, DType::I8,
                  DType::U8, DType::I16, DType::U16, DType::Bool, DType::U32,
                  DType::U64, DType::F16}) {
    Tensor a(t, {2, 3});
    auto *bytes = static_cast<uint8_t *>(a.data());
    for (size_t i = 0; i < a.byteSize(); ++i)
      bytes[i] = t == DType::Bool ? i % 2 : static_cast<uint8_t>(i * 37 + 1);
    std::string path =
        (tempDir() / (std::string("rt-") + dtypeName(t) + ".pb")).string();
    writeTensorProto(path, "t", a);
    std::string name;
    Tensor b = readTensorProto(path, &name);
    EXPECT_EQ(name, "t");
    EXPECT_EQ(b.dtype(), t) << dtypeName(t);
    EXPECT_EQ(b.shape(), a.shape());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.byteSize()), 0) << dtypeName(t);
  }
  // A scalar.
  Tensor s(DType::F32, {});
  *s.as<float>() = 2.5f;
  std::string path = (tempDir() / "scalar.pb").string();
  writeTensorProto(path, "s", s);
  Tensor r = readTensorProto(path);
  EXPECT_EQ(r.rank(), 0);
  EXPECT_EQ(*r.as<float>(), 2.5f);
}

std::string writeProto(const std::string &name, const onnx::TensorProto &p) {
  std::string path = (tempDir() / name).string();
  std::ofstream out(path, std::ios::binary);
  p.SerializeToOstream(&out);
  return path;
}

TEST(TensorProto, TypedFields) {
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_dims(3);
  for (int64_t v : {int64_t(-1), int64_t(2), int64_t(1) << 40})
    p.add_int64_data(v);
  Tensor t = readTensorProto(writeProto("i64.pb", p));
  EXPECT_EQ(std::vector<int64_t>(t.as<int64_t>(), t.as<int64_t>() + 3),
            (std::vector<int64_t>{-1, 2, int64_t(1) << 40}));

  p.Clear();
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(2);
  p.add_float_data(1.5f);
  p.add_float_data(-2.0f);
  t = readTensorProto(writeProto("f32.pb", p));
  EXPECT_EQ(t.as<float>()[1], -2.0f);

  p.Clear();
  p.set_data_type(onnx::TensorProto::INT8);
  p.add_dims(2);
  p.add_int32_data(-5);
  p.add_int32_data(7);
  t = readTensorProto(writeProto("i8.pb", p));
  EXPECT_EQ(t.dtype(), DType::I8);
  EXPECT_EQ(t.as<int8_t>()[0], -5);

  p.Clear();
  p.set_data_type(onnx::TensorProto::BOOL);
  p.add_dims(2);
  p.add_int32_data(1);
  p.add_int32_data(0);
  t = readTensorProto(writeProto("bool.pb", p));
  EXPECT_EQ(t.as<uint8_t>()[0], 1);
  EXPECT_EQ(t.as<uint8_t>()[1], 0);

  p.Clear();
  p.set_data_type(onnx::TensorProto::UINT32);
  p.add_dims(1);
  p.add_uint64_data(4000000000u);
  t = readTensorProto(writeProto("u32.pb", p));
  EXPECT_EQ(t.as<uint32_t>()[0], 4000000000u);

  p.Clear();
  p.set_data_type(onnx::TensorProto::DOUBLE);
  p.add_dims(1);
  p.add_double_data(0.1);
  t = readTensorProto(writeProto("f64.pb", p));
  EXPECT_EQ(t.as<double>()[0], 0.1);

  p.Clear();
  p.set_data_type(onnx::TensorProto::INT32);
  p.add_dims(3);
  p.add_int32_data(1);
  std::string path = writeProto("short.pb", p);
  std::string msg = errorOf([&] { readTensorProto(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("expected 3 elements"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 1"), std::string::npos) << msg;
}

TEST(TensorProto, Errors) {
  onnx::TensorProto p;
  p.set_name("words");
  p.set_data_type(onnx::TensorProto::STRING);
  p.add_dims(1);
  p.add_string_data("hello");
  std::string path = writeProto("string.pb", p);
  std::string msg = errorOf([&] { readTensorProto(path); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("STRING"), std::string::npos) << msg;

  p.Clear();
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(4);
  p.set_raw_data(std::string(12, '\0'));
  path = writeProto("raw.pb", p);
  msg = errorOf([&] { readTensorProto(path); });
  EXPECT_NE(msg.find("expected 16 bytes"), std::string::npos) << msg;
  EXPECT_NE(msg.find("found 12"), std::string::npos) << msg;

  path = writeFile("garbage.pb", "\xff\xff\xff\xff");
  msg = errorOf([&] { readTensorProto(path); });
  EXPECT_NE(msg.find("not an ONNX TensorProto"), std::string::npos) << msg;

  msg = errorOf([&] { readTensorProto((tempDir() / "nope.pb").string()); });
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

} // namespace
