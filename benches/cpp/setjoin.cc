// A single-threaded C++ baseline of the set-similarity self-joins that `dupflow join` runs:
// All-Pairs (Bayardo et al., WWW 2007), PPJoin and PPJoin+ (Xiao et al., WWW 2008), written
// the way the original programs work (records as sorted integer token arrays, the inverted index
// built while probing, size filtering by moving each list's start, an overlap count per candidate
// with -1 for pruned), for `benches/joins.sh` to compare with. It is written here for the
// benchmark only; it is not the authors' code.
//
// Tokenizing is the same as dupflow's (words split on white space, the k-th occurrence of a word
// its own token, global order by ascending document frequency, ties by word then occurrence) and
// thresholds are the same exact fractions, so both programs see the same records in the same
// order and must report the same candidates and results.
//
//   setjoin jaccard|cosine THRESHOLD allpairs|ppjoin|ppjoinplus FILE [MAXDEPTH]
//
// Prints on stderr: "<algorithm> <measure> >= T: records R, candidates C, verifications V,
// results N, tokenize P s, join J s", and the pairs ("x y similarity", sorted) on stdout.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

enum class Measure { Jaccard, Cosine };
enum class Algo { AllPairs, PpJoin, PpJoinPlus };

struct Threshold {
  Measure measure;
  uint64_t p, q;  // threshold = p / q, exactly

  // Smallest overlap of sets of sizes a and b meeting the threshold (at least 1).
  int required(int a, int b) const {
    uint64_t o;
    if (measure == Measure::Jaccard) {
      uint64_t num = p * (uint64_t)(a + b), den = p + q;
      o = (num + den - 1) / den;
    } else {
      unsigned __int128 target = (unsigned __int128)p * p * (uint64_t)a * (uint64_t)b;
      o = (uint64_t)((double)p * std::sqrt((double)a * (double)b) / (double)q);
      while (o > 0 && (unsigned __int128)(q * (o - 1)) * (q * (o - 1)) >= target) o--;
      while ((unsigned __int128)(q * o) * (q * o) < target) o++;
    }
    return o < 1 ? 1 : (int)o;
  }
  double value(int o, int a, int b) const {
    return measure == Measure::Jaccard ? (double)o / (a + b - o) : o / std::sqrt((double)a * b);
  }
  // Smallest size b <= a that can meet the threshold with size a, or -1.
  int min_size(int a) const {
    if (a == 0 || required(a, a) > a) return -1;
    int lo = 1, hi = a;
    while (lo < hi) {
      int mid = (lo + hi) / 2;
      if (required(a, mid) <= mid) hi = mid; else lo = mid + 1;
    }
    return lo;
  }
  int probe_prefix(int a) const {
    int b = min_size(a);
    return b < 0 ? 0 : a + 1 - std::min(required(a, b), a);
  }
  int index_prefix(int a) const {
    return min_size(a) < 0 ? 0 : a + 1 - std::min(required(a, a), a);
  }
};

bool parse_threshold(const char* text, Measure m, Threshold* t) {
  const char* dot = std::strchr(text, '.');
  std::string ip = dot ? std::string(text, dot - text) : std::string(text);
  std::string fp = dot ? std::string(dot + 1) : std::string();
  if (fp.size() > 9) return false;
  uint64_t den = 1;
  for (size_t i = 0; i < fp.size(); i++) den *= 10;
  uint64_t num = (ip.empty() ? 0 : std::strtoull(ip.c_str(), nullptr, 10)) * den +
                 (fp.empty() ? 0 : std::strtoull(fp.c_str(), nullptr, 10));
  uint64_t a = num, b = den;
  while (b) { uint64_t r = a % b; a = b; b = r; }
  if (num == 0 || num > den) return false;
  *t = Threshold{m, num / a, den / a};
  return true;
}

// Records in processing order (size, then line), tokens flat.
struct Records {
  std::vector<uint32_t> tokens;   // all records' tokens, each record ascending
  std::vector<uint32_t> start;    // record r = tokens[start[r] .. start[r + 1])
  std::vector<uint32_t> line;     // 1-based line number
  uint32_t universe = 0;
  int size(size_t r) const { return (int)(start[r + 1] - start[r]); }
  const uint32_t* at(size_t r) const { return tokens.data() + start[r]; }
};

Records tokenize(const std::vector<std::string>& lines) {
  std::unordered_map<std::string, uint32_t> ids;
  std::vector<std::pair<std::string, uint32_t>> keys;
  std::vector<uint32_t> df;
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> raw;
  std::unordered_map<std::string, uint32_t> seen;
  for (size_t n = 0; n < lines.size(); n++) {
    seen.clear();
    std::vector<uint32_t> rec;
    const std::string& s = lines[n];
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && std::isspace((unsigned char)s[i])) i++;
      size_t j = i;
      while (j < s.size() && !std::isspace((unsigned char)s[j])) j++;
      if (j == i) break;
      std::string word = s.substr(i, j - i);
      uint32_t k = ++seen[word];
      std::string key = word;
      key.push_back('\0');
      key += std::to_string(k);
      auto it = ids.find(key);
      uint32_t id;
      if (it == ids.end()) {
        id = (uint32_t)keys.size();
        ids.emplace(std::move(key), id);
        keys.emplace_back(word, k);
        df.push_back(0);
      } else {
        id = it->second;
      }
      df[id]++;
      rec.push_back(id);
      i = j;
    }
    if (!rec.empty()) raw.emplace_back((uint32_t)(n + 1), std::move(rec));
  }
  std::vector<uint32_t> order(keys.size());
  for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (df[a] != df[b]) return df[a] < df[b];
    return keys[a] < keys[b];
  });
  std::vector<uint32_t> rank(keys.size());
  for (uint32_t r = 0; r < order.size(); r++) rank[order[r]] = r;
  for (auto& rr : raw) {
    for (auto& t : rr.second) t = rank[t];
    std::sort(rr.second.begin(), rr.second.end());
  }
  std::stable_sort(raw.begin(), raw.end(), [](const auto& a, const auto& b) {
    if (a.second.size() != b.second.size()) return a.second.size() < b.second.size();
    return a.first < b.first;
  });
  Records recs;
  recs.start.push_back(0);
  for (auto& rr : raw) {
    recs.line.push_back(rr.first);
    recs.tokens.insert(recs.tokens.end(), rr.second.begin(), rr.second.end());
    recs.start.push_back((uint32_t)recs.tokens.size());
  }
  recs.universe = (uint32_t)keys.size();
  return recs;
}

// The overlap of two ascending token arrays if it reaches need, else -1: a branch-free merge
// that stops as soon as the tokens left cannot make up the difference (as dupflow's).
int overlap_at_least(const uint32_t* x, int a, const uint32_t* y, int b, int need) {
  int i = 0, j = 0, o = 0;
  while (i < a && j < b) {
    if (o + std::min(a - i, b - j) < need) return -1;
    uint32_t u = x[i], v = y[j];
    o += u == v;
    i += u <= v;
    j += v <= u;
  }
  return o >= need ? o : -1;
}

// PPJoin+'s suffix filter: a lower bound of the Hamming distance, early exit above hmax.
int64_t suffix_filter(const uint32_t* x, int lx, const uint32_t* y, int ly, int64_t hmax, int depth, int max_depth) {
  if (lx == 0 || ly == 0) return lx + ly;
  if (depth > max_depth) return std::abs(lx - ly);
  int mid = ly / 2;
  uint32_t w = y[mid];
  int p = (int)(std::lower_bound(x, x + lx, w) - x);
  int yl = mid, yr = ly - mid - 1;
  int xl = p, xr, diff;
  if (p < lx && x[p] == w) { xr = lx - p - 1; diff = 0; } else { xr = lx - p; diff = 1; }
  int64_t right = std::abs(xr - yr);
  int64_t h = std::abs(xl - yl) + right + diff;
  if (h > hmax) return h;
  int64_t hl = suffix_filter(x, xl, y, yl, hmax - right - diff, depth + 1, max_depth);
  h = hl + right + diff;
  if (h > hmax) return h;
  const uint32_t* xrp = x + lx - xr;
  int64_t hr = suffix_filter(xrp, xr, y + mid + 1, yr, hmax - hl - diff, depth + 1, max_depth);
  return hl + hr + diff;
}

struct Pair { uint32_t x, y; double v; };
struct Posting { uint32_t rec, pos; };

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: setjoin jaccard|cosine THRESHOLD allpairs|ppjoin|ppjoinplus FILE [MAXDEPTH]\n");
    return 2;
  }
  Measure measure;
  if (!std::strcmp(argv[1], "jaccard")) measure = Measure::Jaccard;
  else if (!std::strcmp(argv[1], "cosine")) measure = Measure::Cosine;
  else { std::fprintf(stderr, "measure: jaccard or cosine\n"); return 2; }
  Threshold th;
  if (!parse_threshold(argv[2], measure, &th)) { std::fprintf(stderr, "bad threshold\n"); return 2; }
  Algo algo;
  if (!std::strcmp(argv[3], "allpairs")) algo = Algo::AllPairs;
  else if (!std::strcmp(argv[3], "ppjoin")) algo = Algo::PpJoin;
  else if (!std::strcmp(argv[3], "ppjoinplus")) algo = Algo::PpJoinPlus;
  else { std::fprintf(stderr, "algorithm: allpairs, ppjoin or ppjoinplus\n"); return 2; }
  int max_depth = argc > 5 ? std::atoi(argv[5]) : 2;

  auto t0 = std::chrono::steady_clock::now();
  std::ifstream in(argv[4]);
  if (!in) { std::fprintf(stderr, "cannot open %s\n", argv[4]); return 1; }
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(std::move(l));
  Records R = tokenize(lines);
  auto t1 = std::chrono::steady_clock::now();

  size_t n = R.line.size();
  // Size bounds per size, and the required overlap per partner size of the current size
  // (records come in size order), as dupflow caches them.
  int max_size = n ? R.size(n - 1) : 0;
  std::vector<int> min_size_of(max_size + 1), probe_of(max_size + 1), index_of(max_size + 1);
  for (int a = 0; a <= max_size; a++) {
    min_size_of[a] = th.min_size(a);
    probe_of[a] = th.probe_prefix(a);
    index_of[a] = th.index_prefix(a);
  }
  std::vector<int> alpha;
  int alpha_size = -1;
  std::vector<std::vector<Posting>> index(R.universe);
  std::vector<uint32_t> list_start(R.universe, 0);
  std::vector<int> count(n, 0);
  std::vector<uint32_t> touched;
  std::vector<Pair> pairs;
  uint64_t candidates = 0, verifications = 0;
  for (size_t x = 0; x < n; x++) {
    const uint32_t* tx = R.at(x);
    int a = R.size(x);
    int min_size = min_size_of[a];
    if (min_size < 0) continue;
    if (alpha_size != a) {
      alpha.clear();
      for (int b = min_size; b <= a; b++) alpha.push_back(th.required(a, b));
      alpha_size = a;
    }
    int pp = probe_of[a];
    for (int px = 0; px < pp; px++) {
      uint32_t tok = tx[px];
      std::vector<Posting>& list = index[tok];
      uint32_t& s = list_start[tok];
      while (s < list.size() && R.size(list[s].rec) < min_size) s++;
      for (size_t k = s; k < list.size(); k++) {
        uint32_t y = list[k].rec, py = list[k].pos;
        int c = count[y];
        if (c < 0) continue;
        bool keep = true;
        if (algo != Algo::AllPairs) {
          int b = R.size(y);
          int need = alpha[b - min_size];
          int ubound = 1 + std::min(a - px - 1, b - (int)py - 1);
          keep = c + ubound >= need;
          if (keep && c == 0 && algo == Algo::PpJoinPlus) {
            int64_t hmax = (int64_t)(a + b) - 2 * (int64_t)need - (px + (int64_t)py);
            keep = hmax >= 0 &&
                   suffix_filter(tx + px + 1, a - px - 1, R.at(y) + py + 1, b - (int)py - 1, hmax, 1, max_depth) <= hmax;
          }
        }
        if (c == 0) touched.push_back(y);
        count[y] = keep ? c + 1 : -1;
      }
    }
    for (uint32_t y : touched) {
      if (count[y] > 0) {
        candidates++;
        verifications++;
        int b = R.size(y);
        int o = overlap_at_least(tx, a, R.at(y), b, alpha[b - min_size]);
        if (o >= 0) {
          uint32_t lx = R.line[x], ly = R.line[y];
          pairs.push_back(Pair{std::max(lx, ly), std::min(lx, ly), th.value(o, a, b)});
        }
      }
      count[y] = 0;
    }
    touched.clear();
    int ip = index_of[a];
    for (int p = 0; p < ip; p++) index[tx[p]].push_back(Posting{(uint32_t)x, (uint32_t)p});
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& l, const Pair& r) {
    return l.x != r.x ? l.x < r.x : l.y < r.y;
  });
  auto t2 = std::chrono::steady_clock::now();

  std::string out;
  char buf[64];
  for (const Pair& p : pairs) {
    int k = std::snprintf(buf, sizeof buf, "%u %u %.3f\n", p.x, p.y, p.v);
    out.append(buf, k);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  const char* name = algo == Algo::AllPairs ? "allpairs" : algo == Algo::PpJoin ? "ppjoin" : "ppjoinplus";
  std::string label = name;
  if (algo == Algo::PpJoinPlus) label += " (depth " + std::to_string(max_depth) + ")";
  std::fprintf(stderr, "%s %s >= %s: records %zu, candidates %llu, verifications %llu, results %zu, tokenize %.3f s, join %.3f s\n",
               label.c_str(), argv[1], argv[2], n, (unsigned long long)candidates, (unsigned long long)verifications,
               pairs.size(), std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  return 0;
}
