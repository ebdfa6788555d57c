// A single-threaded C++ baseline of the edit-distance self-joins that `dupflow join
// --edit-distance` runs: All-Pairs-Ed, Ed-Join-l and Ed-Join (Xiao, Wang and Lin, VLDB 2008),
// written the way the original programs work (strings as code points, positional q-gram tokens
// ranked by ascending frequency, a prefix inverted index built while probing, count filter,
// location-based mismatch filter, content-based filter on character histograms, banded
// verification with reused buffers), for `benches/joins.sh` to compare with. It is written here
// for the benchmark only; it is not the authors' code.
//
// Grams are hashed and ranked as dupflow ranks them (FNV-1a over the code points, then the same
// 64-bit mixer; the k-th occurrence of a gram its own token; ties by hash then occurrence), and
// the filters are the same, so both programs must report the same candidates, verifications and
// results.
//
//   edjoin TAU Q allpairs-ed|edjoin-l|edjoin FILE [MIN_LENGTH]
//
// Prints on stderr: "<algorithm> edit distance <= TAU, q = Q, min length L: records R,
// candidates C, verifications V, results N, tokenize P s, join J s", and the pairs
// ("x y distance", sorted) on stdout.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

enum class Algo { AllPairsEd, EdJoinL, EdJoin };

struct Token { uint32_t rank, loc; bool unique; };

struct Str {
  uint32_t line;
  std::vector<uint32_t> chars;
  std::vector<Token> tokens;  // ascending by rank
  int prefix;                 // -1: too few grams to filter
};

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t gram_hash(const uint32_t* g, int q) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < q; i++) { h ^= g[i]; h *= 0x100000001b3ULL; }
  return mix64(h);
}

// UTF-8 to code points (invalid bytes become U+FFFD, as Rust's lossy reading does).
std::vector<uint32_t> decode(const std::string& s) {
  std::vector<uint32_t> out;
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = s[i];
    uint32_t cp; int len;
    if (c < 0x80) { cp = c; len = 1; }
    else if ((c >> 5) == 6) { cp = c & 0x1f; len = 2; }
    else if ((c >> 4) == 14) { cp = c & 0x0f; len = 3; }
    else if ((c >> 3) == 30) { cp = c & 0x07; len = 4; }
    else { out.push_back(0xfffd); i++; continue; }
    if (i + len > s.size()) { out.push_back(0xfffd); i++; continue; }
    for (int k = 1; k < len; k++) cp = (cp << 6) | (s[i + k] & 0x3f);
    out.push_back(cp);
    i += len;
  }
  return out;
}

// The fewest edits that destroy grams at all the ascending locations.
int min_edits(const uint32_t* locs, size_t n, int q) {
  int edits = 0;
  int64_t covered_to = -1;
  for (size_t i = 0; i < n; i++) {
    if ((int64_t)locs[i] > covered_to) { edits++; covered_to = (int64_t)locs[i] + q - 1; }
  }
  return edits;
}

int prefix_length(const std::vector<Token>& tokens, int q, int tau, Algo algo) {
  int count_prefix = q * tau + 1;
  if ((int)tokens.size() < count_prefix) return -1;
  if (algo == Algo::AllPairsEd) return count_prefix;
  std::vector<uint32_t> locs;
  for (int i = 0; i < count_prefix; i++) {
    const Token& t = tokens[i];
    if (t.unique) {
      locs.insert(std::lower_bound(locs.begin(), locs.end(), t.loc), t.loc);
      if (min_edits(locs.data(), locs.size(), q) > tau) return i + 1;
    }
  }
  return count_prefix;
}

// Banded edit distance within tau, or -1; buffers reused.
struct Banded {
  std::vector<int> prev, cur;
  int within(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, int tau) {
    int n = (int)a.size(), m = (int)b.size();
    if (std::abs(n - m) > tau) return -1;
    if (a == b) return 0;
    const int BIG = 1 << 29;
    prev.assign(m + 1, BIG);
    cur.assign(m + 1, BIG);
    for (int j = 0; j <= std::min(tau, m); j++) prev[j] = j;
    for (int i = 1; i <= n; i++) {
      int lo = std::max(i - tau, 0), hi = std::min(i + tau, m);
      // Only the band is read next row; clear its edges.
      if (lo > 0) cur[lo - 1] = BIG;
      if (hi + 1 <= m) cur[hi + 1 <= m ? hi + 1 : m] = BIG;
      int row_min = BIG;
      if (lo == 0) { cur[0] = i; row_min = i; }
      for (int j = std::max(lo, 1); j <= hi; j++) {
        int v = prev[j - 1] + (a[i - 1] != b[j - 1]);
        v = std::min(v, prev[j] + 1);
        v = std::min(v, cur[j - 1] + 1);
        cur[j] = v;
        row_min = std::min(row_min, v);
      }
      if (row_min > tau) return -1;
      std::swap(prev, cur);
    }
    return prev[m] <= tau ? prev[m] : -1;
  }
};

// L1 distance of the character histograms of two short windows (sorted copies, merged).
int histogram_l1(const uint32_t* a, size_t na, const uint32_t* b, size_t nb, std::vector<uint32_t>& sa, std::vector<uint32_t>& sb) {
  sa.assign(a, a + na);
  sb.assign(b, b + nb);
  std::sort(sa.begin(), sa.end());
  std::sort(sb.begin(), sb.end());
  size_t i = 0, j = 0;
  int common = 0;
  while (i < sa.size() && j < sb.size()) {
    if (sa[i] == sb[j]) { common++; i++; j++; }
    else if (sa[i] < sb[j]) i++;
    else j++;
  }
  return (int)(na + nb) - 2 * common;
}

struct Filters {
  int q, tau;
  Algo algo;
  std::vector<uint32_t> mismatched, sa, sb;

  int content_bound(const Str& x, const Str& y) {
    int best = 0;
    size_t start = 0, n = mismatched.size();
    while (start < n) {
      size_t end = start;
      while (end + 1 < n && mismatched[end + 1] < mismatched[end] + (uint32_t)q) end++;
      size_t from = mismatched[start], to = mismatched[end] + q;
      size_t xto = std::min(to, x.chars.size());
      size_t yfrom = std::min(from, y.chars.size()), yto = std::min(to, y.chars.size());
      if (from > y.chars.size() || yto < yfrom) { yfrom = yto = 0; }
      int l1 = histogram_l1(x.chars.data() + from, xto - from, y.chars.data() + yfrom, yto - yfrom, sa, sb);
      int bound = (l1 + 1) / 2 + min_edits(mismatched.data() + end + 1, n - end - 1, q);
      best = std::max(best, bound);
      start = end + 1;
    }
    return best;
  }

  // Count filter (computed once per pair, branch-free merge), then the mismatch filters both ways.
  bool survives(const Str& x, const Str& y) {
    size_t i = 0, j = 0, common = 0;
    while (i < x.tokens.size() && j < y.tokens.size()) {
      uint32_t u = x.tokens[i].rank, v = y.tokens[j].rank;
      common += u == v;
      i += u <= v;
      j += v <= u;
    }
    if (common + (size_t)(q * tau) < std::max(x.tokens.size(), y.tokens.size())) return false;
    return algo == Algo::AllPairsEd || (mismatch(x, y) && mismatch(y, x));
  }

  bool mismatch(const Str& x, const Str& y) {
    mismatched.clear();
    for (int k = 0; k < x.prefix; k++) {
      const Token& t = x.tokens[k];
      if (!t.unique) continue;
      auto it = std::lower_bound(y.tokens.begin(), y.tokens.end(), t.rank, [](const Token& a, uint32_t r) { return a.rank < r; });
      if (it == y.tokens.end() || it->rank != t.rank) mismatched.push_back(t.loc);
    }
    std::sort(mismatched.begin(), mismatched.end());
    if (min_edits(mismatched.data(), mismatched.size(), q) > tau) return false;
    if (algo == Algo::EdJoin && content_bound(x, y) > tau) return false;
    return true;
  }
};

struct Pair { uint32_t x, y; int d; };
struct Posting { uint32_t rec, loc; bool unique; };

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: edjoin TAU Q allpairs-ed|edjoin-l|edjoin FILE [MIN_LENGTH]\n");
    return 2;
  }
  int tau = std::atoi(argv[1]), q = std::atoi(argv[2]);
  if (q < 1 || tau < 0) { std::fprintf(stderr, "bad TAU or Q\n"); return 2; }
  Algo algo;
  if (!std::strcmp(argv[3], "allpairs-ed")) algo = Algo::AllPairsEd;
  else if (!std::strcmp(argv[3], "edjoin-l")) algo = Algo::EdJoinL;
  else if (!std::strcmp(argv[3], "edjoin")) algo = Algo::EdJoin;
  else { std::fprintf(stderr, "algorithm: allpairs-ed, edjoin-l or edjoin\n"); return 2; }
  int min_length = argc > 5 ? std::atoi(argv[5]) : q * (tau + 1);
  if (min_length < q * (tau + 1)) {
    std::fprintf(stderr, "this baseline skips strings shorter than q(tau + 1), as the original\n");
    return 2;
  }

  auto t0 = std::chrono::steady_clock::now();
  std::ifstream in(argv[4]);
  if (!in) { std::fprintf(stderr, "cannot open %s\n", argv[4]); return 1; }
  std::vector<Str> items;
  std::unordered_map<uint64_t, uint32_t> ids_first;  // (hash, 1) -> id, the common case
  std::unordered_map<uint64_t, std::vector<uint32_t>> ids_more;  // hash -> ids of occurrences 2..
  std::vector<std::pair<uint64_t, uint32_t>> keys;
  std::vector<uint32_t> df;
  std::unordered_map<uint64_t, uint32_t> seen, occurrence;
  uint32_t n = 0;
  for (std::string l; std::getline(in, l);) {
    n++;
    std::vector<uint32_t> chars = decode(l);
    if ((int)chars.size() < min_length) continue;
    std::vector<uint64_t> grams;
    if ((int)chars.size() >= q)
      for (size_t i = 0; i + q <= chars.size(); i++) grams.push_back(gram_hash(chars.data() + i, q));
    seen.clear();
    for (uint64_t g : grams) seen[g]++;
    occurrence.clear();
    Str s{n, std::move(chars), {}, 0};
    s.tokens.reserve(grams.size());
    for (size_t loc = 0; loc < grams.size(); loc++) {
      uint64_t g = grams[loc];
      uint32_t k = ++occurrence[g];
      uint32_t id;
      if (k == 1) {
        auto it = ids_first.find(g);
        if (it == ids_first.end()) { id = keys.size(); ids_first.emplace(g, id); keys.emplace_back(g, 1); df.push_back(0); }
        else id = it->second;
      } else {
        std::vector<uint32_t>& more = ids_more[g];
        if (more.size() < k - 1) { id = keys.size(); more.push_back(id); keys.emplace_back(g, k); df.push_back(0); }
        else id = more[k - 2];
      }
      df[id]++;
      s.tokens.push_back(Token{id, (uint32_t)loc, seen[g] == 1});
    }
    items.push_back(std::move(s));
  }
  std::vector<uint32_t> order(keys.size());
  for (uint32_t i = 0; i < order.size(); i++) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (df[a] != df[b]) return df[a] < df[b];
    return keys[a] < keys[b];
  });
  std::vector<uint32_t> rank(keys.size());
  for (uint32_t r = 0; r < order.size(); r++) rank[order[r]] = r;
  for (Str& s : items) {
    for (Token& t : s.tokens) t.rank = rank[t.rank];
    std::sort(s.tokens.begin(), s.tokens.end(), [](const Token& a, const Token& b) { return a.rank < b.rank; });
    s.prefix = prefix_length(s.tokens, q, tau, algo);
  }
  std::stable_sort(items.begin(), items.end(), [](const Str& a, const Str& b) {
    return a.chars.size() != b.chars.size() ? a.chars.size() < b.chars.size() : a.line < b.line;
  });
  auto t1 = std::chrono::steady_clock::now();

  size_t count = items.size();
  std::vector<std::vector<Posting>> index(keys.size());
  std::vector<uint32_t> list_start(keys.size(), 0);
  std::vector<char> marked(count, 0);
  std::vector<uint32_t> touched;
  std::vector<Pair> pairs;
  Filters filters{q, tau, algo, {}, {}, {}};
  Banded banded;
  uint64_t candidates = 0, verifications = 0;
  bool positional = algo != Algo::AllPairsEd;
  for (size_t x = 0; x < count; x++) {
    const Str& sx = items[x];
    if (sx.prefix < 0) continue;  // cannot happen above q(tau + 1) characters
    size_t min_len = sx.chars.size() > (size_t)tau ? sx.chars.size() - tau : 0;
    for (int k = 0; k < sx.prefix; k++) {
      const Token& t = sx.tokens[k];
      std::vector<Posting>& list = index[t.rank];
      uint32_t& s = list_start[t.rank];
      while (s < list.size() && items[list[s].rec].chars.size() < min_len) s++;
      for (size_t p = s; p < list.size(); p++) {
        const Posting& post = list[p];
        if (marked[post.rec]) continue;
        if (positional && t.unique && post.unique &&
            (t.loc > post.loc ? t.loc - post.loc : post.loc - t.loc) > (uint32_t)tau) continue;
        marked[post.rec] = 1;
        touched.push_back(post.rec);
      }
    }
    for (uint32_t y : touched) {
      marked[y] = 0;
      candidates++;
      const Str& sy = items[y];
      if (filters.survives(sx, sy)) {
        verifications++;
        int d = banded.within(sx.chars, sy.chars, tau);
        if (d >= 0) pairs.push_back(Pair{std::max(sx.line, sy.line), std::min(sx.line, sy.line), d});
      }
    }
    touched.clear();
    for (int k = 0; k < sx.prefix; k++) {
      const Token& t = sx.tokens[k];
      index[t.rank].push_back(Posting{(uint32_t)x, t.loc, t.unique});
    }
  }
  std::sort(pairs.begin(), pairs.end(), [](const Pair& l, const Pair& r) {
    return l.x != r.x ? l.x < r.x : l.y < r.y;
  });
  auto t2 = std::chrono::steady_clock::now();

  std::string out;
  char buf[48];
  for (const Pair& p : pairs) {
    int k = std::snprintf(buf, sizeof buf, "%u %u %d\n", p.x, p.y, p.d);
    out.append(buf, k);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fprintf(stderr, "%s edit distance <= %d, q = %d, min length %d: records %zu, candidates %llu, verifications %llu, results %zu, tokenize %.3f s, join %.3f s\n",
               argv[3], tau, q, min_length, count, (unsigned long long)candidates, (unsigned long long)verifications, pairs.size(),
               std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  return 0;
}
