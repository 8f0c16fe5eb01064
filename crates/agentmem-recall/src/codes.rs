//! Vectors as 8-bit codes, for a scan of 100,000 candidates that is fast and still exact.
//!
//! A scan of 100,000 vectors of 384 `f32`s reads 150 MB, which takes longer than the 20 ms a
//! search has. Each kept row is also held as one signed byte a dimension and a scale (a
//! quarter of the bytes). The scan scores every candidate from its codes, which are off by at
//! most a known bound ([`Codes::error_bound`]); only the candidates whose score could still
//! reach the best `depth` are scored again from their exact vectors. The result is the one
//! a scan of the exact vectors gives.

/// Codes of unit vectors, one row per catalog item (rows not known yet have a NaN scale).
#[derive(Debug, Default)]
pub(crate) struct Codes {
    dims: usize,
    codes: Vec<i8>,
    scales: Vec<f32>,
}

/// Added to every error bound: the codes' and the exact scores' own `f32` rounding.
const ROUNDING_SLACK: f32 = 1e-4;

impl Codes {
    /// `rows` unknown rows of `dims` dimensions.
    pub(crate) fn new(rows: usize, dims: usize) -> Self {
        Codes {
            dims,
            codes: vec![0; rows.saturating_mul(dims)],
            scales: vec![f32::NAN; rows],
        }
    }

    /// Records row `row`'s vector; a vector of other dimensions leaves the row unknown.
    pub(crate) fn set(&mut self, row: usize, vector: &[f32]) {
        if vector.len() != self.dims || row >= self.scales.len() {
            return;
        }
        let max = vector.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max.is_finite() { max / 127.0 } else { 0.0 };
        let codes = &mut self.codes[row * self.dims..(row + 1) * self.dims];
        for (code, x) in codes.iter_mut().zip(vector) {
            // |x − scale·code| ≤ scale / 2.
            *code = if scale > 0.0 {
                (x / scale).round().clamp(-127.0, 127.0) as i8
            } else {
                0
            };
        }
        self.scales[row] = scale;
    }

    /// The score from the codes of each of `rows` that is known, `(row, score)`, and apart
    /// the rows not known yet.
    pub(crate) fn scan(
        &self, query: &[f32], rows: impl IntoIterator<Item = usize>,
    ) -> (Vec<(usize, f32)>, Vec<usize>) {
        let (mut scored, mut unknown) = (Vec::new(), Vec::new());
        let Some(query) = QueryCodes::of(query, self.dims) else {
            return (scored, rows.into_iter().collect());
        };
        for row in rows {
            let scale = self.scales.get(row).copied().unwrap_or(f32::NAN);
            if scale.is_nan() {
                unknown.push(row);
                continue;
            }
            let codes = &self.codes[row * self.dims..(row + 1) * self.dims];
            let sum = code_dot(codes, &query.codes) as f32;
            scored.push((row, scale * query.scale * sum));
        }
        (scored, unknown)
    }

    /// [`scan`](Self::scan) of `rows`, split over the machine's cores (up to 4) when there
    /// are enough of them to be worth a thread each.
    pub(crate) fn scan_parallel(
        &self, query: &[f32], rows: &[usize],
    ) -> (Vec<(usize, f32)>, Vec<usize>) {
        /// Fewer rows a thread cost more to start than to scan.
        const ROWS_A_THREAD: usize = 16_384;
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(4)
            .min(rows.len() / ROWS_A_THREAD)
            .max(1);
        if threads == 1 {
            return self.scan(query, rows.iter().copied());
        }
        let parts: Vec<&[usize]> = rows.chunks(rows.len().div_ceil(threads)).collect();
        std::thread::scope(|scope| {
            let others: Vec<_> = parts[1..]
                .iter()
                .map(|part| (part, scope.spawn(|| self.scan(query, part.iter().copied()))))
                .collect();
            let (mut scored, mut unknown) = self.scan(query, parts[0].iter().copied());
            for (part, thread) in others {
                // A scan does not panic; were one to, its part is scanned here instead.
                let (more, missing) = thread
                    .join()
                    .unwrap_or_else(|_| self.scan(query, part.iter().copied()));
                scored.extend(more);
                unknown.extend(missing);
            }
            (scored, unknown)
        })
    }

    /// What the error bounds of a scan for `query` (a unit vector) depend on.
    pub(crate) fn query_bound(&self, query: &[f32]) -> QueryBound {
        QueryBound {
            l1: query.iter().map(|x| x.abs()).sum(),
            half_step: QueryCodes::of(query, self.dims).map_or(f32::INFINITY, |q| q.scale / 2.0),
            dims: self.dims as f32,
        }
    }

    /// How far row `row`'s score from the codes can be from its exact score (unit vectors).
    /// With `x = s·c + e` (the row: scale, codes, error) and `q = t·d + f` (the query's),
    /// `x·q − s·t·(c·d) = e·q + s·c·f`, so it is at most `s/2 · |q|₁ + t/2 · |s·c|₁`, where
    /// `|s·c|₁ ≤ |x|₁ + dims·s/2 ≤ √dims + dims·s/2`.
    pub(crate) fn error_bound(&self, row: usize, query: &QueryBound) -> f32 {
        let s = self.scales.get(row).copied().unwrap_or(f32::INFINITY);
        s / 2.0 * query.l1
            + query.half_step * (query.dims.sqrt() + query.dims * s / 2.0)
            + ROUNDING_SLACK
    }
}

/// What a query brings to the error bound of every row (see [`Codes::error_bound`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueryBound {
    l1: f32,
    half_step: f32,
    dims: f32,
}

/// The query as 16-bit codes: products of 16-bit integers summed in pairs are one
/// instruction on every x86-64 (`pmaddwd`), where converting the rows' bytes to floats is
/// several.
struct QueryCodes {
    codes: Vec<i16>,
    scale: f32,
}

impl QueryCodes {
    /// `query`'s codes, scaled so that no sum of `dims` products with row codes (at most
    /// 127) leaves an `i32`; `None` when `query` has other dimensions.
    fn of(query: &[f32], dims: usize) -> Option<Self> {
        if query.len() != dims || dims == 0 {
            return None;
        }
        let top = (i32::MAX as usize / (127 * dims)).min(i16::MAX as usize) as f32;
        let max = query.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = if max > 0.0 && max.is_finite() {
            max / top
        } else {
            1.0
        };
        let codes = query
            .iter()
            .map(|x| (x / scale).round().clamp(-top, top) as i16)
            .collect();
        Some(QueryCodes { codes, scale })
    }
}

/// `Σ codes[i] · query[i]` in integers, summed in pairs (the shape `pmaddwd` computes).
fn code_dot(codes: &[i8], query: &[i16]) -> i32 {
    let (c_chunks, c_tail) = codes.as_chunks::<8>();
    let (q_chunks, q_tail) = query.as_chunks::<8>();
    let mut sums = [0i32; 4];
    for (c, q) in c_chunks.iter().zip(q_chunks) {
        for (k, sum) in sums.iter_mut().enumerate() {
            *sum += i32::from(c[2 * k]) * i32::from(q[2 * k])
                + i32::from(c[2 * k + 1]) * i32::from(q[2 * k + 1]);
        }
    }
    let tail: i32 = c_tail
        .iter()
        .zip(q_tail)
        .map(|(c, q)| i32::from(*c) * i32::from(*q))
        .sum();
    sums.iter().sum::<i32>() + tail
}

/// Which of the `coded` candidates (scored from codes) must be scored exactly so that the
/// best `depth` of all are found: those whose upper bound reaches the `depth`-th best lower
/// bound, counting the candidates in `exact` (scored exactly already) at their scores.
pub(crate) fn shortlist(
    coded: &[(usize, f32)], exact: &[(usize, f32)], depth: usize, bound: impl Fn(usize) -> f32,
) -> Vec<usize> {
    if depth == 0 {
        return Vec::new();
    }
    let mut lows: Vec<f32> = coded
        .iter()
        .map(|&(row, score)| score - bound(row))
        .chain(exact.iter().map(|&(_, score)| score))
        .collect();
    let threshold = if lows.len() > depth {
        *lows
            .select_nth_unstable_by(depth - 1, |a, b| b.total_cmp(a))
            .1
    } else {
        f32::NEG_INFINITY
    };
    coded
        .iter()
        .filter(|&&(row, score)| score + bound(row) >= threshold)
        .map(|&(row, _)| row)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{dot, unit};

    /// A deterministic unit vector.
    fn vector(seed: u64, dims: usize) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let raw: Vec<f32> = (0..dims)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 1.0
            })
            .collect();
        unit(&raw).to_vec()
    }

    #[test]
    fn scores_from_codes_stay_within_their_bound() {
        let dims = 37;
        let mut codes = Codes::new(200, dims);
        let rows: Vec<Vec<f32>> = (0..200).map(|i| vector(i, dims)).collect();
        for (i, v) in rows.iter().enumerate() {
            codes.set(i, v);
        }
        codes.set(3, &vec![0.0; dims]);
        codes.set(4, &[1.0, 2.0]);
        let query = vector(999, dims);
        let bound = codes.query_bound(&query);
        let (scored, unknown) = codes.scan(&query, 0..200);
        assert_eq!(unknown, Vec::<usize>::new(), "row 4 keeps its first vector");
        for (row, score) in scored {
            let exact = if row == 3 {
                0.0
            } else {
                dot(&rows[row], &query)
            };
            assert!(
                (score - exact).abs() <= codes.error_bound(row, &bound),
                "row {row}: {score} vs {exact}"
            );
        }
        let many: Vec<usize> = (0..200).cycle().take(70_000).collect();
        let (serial, parallel) = (
            codes.scan(&query, many.iter().copied()),
            codes.scan_parallel(&query, &many),
        );
        assert_eq!(parallel, serial, "the parts come back in order");
        let fresh = Codes::new(2, dims);
        assert_eq!(fresh.scan(&query, [0, 1]), (vec![], vec![0, 1]));
    }

    #[test]
    fn the_shortlist_holds_the_exact_best() {
        let dims = 24;
        let n = 3_000;
        let rows: Vec<Vec<f32>> = (0..n).map(|i| vector(i as u64, dims)).collect();
        let mut codes = Codes::new(n, dims);
        // The first 100 rows are scored exactly (as rows resolved during the search are).
        for (i, v) in rows.iter().enumerate().skip(100) {
            codes.set(i, v);
        }
        for q in 0..20 {
            let query = vector(10_000 + q, dims);
            let bound = codes.query_bound(&query);
            let (coded, unknown) = codes.scan(&query, 0..n);
            assert_eq!(unknown, (0..100).collect::<Vec<_>>());
            let exact: Vec<(usize, f32)> = unknown
                .iter()
                .map(|&i| (i, dot(&rows[i], &query)))
                .collect();
            for depth in [1, 10, 50] {
                let short = shortlist(&coded, &exact, depth, |row| codes.error_bound(row, &bound));
                assert!(
                    short.len() < n / 4,
                    "the shortlist is short: {}",
                    short.len()
                );
                let mut all: Vec<(usize, f32)> =
                    (0..n).map(|i| (i, dot(&rows[i], &query))).collect();
                all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                for &(row, _) in &all[..depth] {
                    assert!(
                        row < 100 || short.contains(&row),
                        "row {row} at depth {depth}"
                    );
                }
            }
        }
        assert!(shortlist(&[(1, 0.5)], &[], 0, |_| 0.0).is_empty());
        assert_eq!(shortlist(&[(1, 0.5), (2, -0.5)], &[], 5, |_| 0.0), [1, 2]);
    }
}
