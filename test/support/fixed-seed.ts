import fc from 'fast-check'

/**
 * Property tests explore random cases. Under mutation testing (vitest.mutation.config.ts) they
 * must explore the same ones on every run, or a mutant would be killed on one run and survive the
 * next: fast-check draws from this seed instead of the time. FC_SEED picks another one.
 */
fc.configureGlobal({ seed: Number(process.env.FC_SEED ?? 20_261_121) })
