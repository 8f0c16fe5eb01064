//! Inference time of `LocalEmbedder` (feature `local`, the model installed):
//! `cargo bench -p agentmem-embed --features local --bench local`.

use agentmem_core::Embedder;
use agentmem_embed::LocalEmbedder;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};

fn sentences(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("Sentence {i}: the agent remembered that Caroline asked about adoption agencies last week."))
        .collect()
}

fn bench(c: &mut Criterion) {
    let embedder = match LocalEmbedder::from_env() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("skipping the local embedder bench: {e}");
            return;
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("local_embed");
    for n in [1, 32] {
        let texts = sentences(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("{n}_sentences"), |b| {
            b.to_async(&rt)
                .iter(|| async { embedder.embed(&texts).await.expect("embed") })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
