/*
 * The lease protocol of lambda-singleton (docs/how-it-works.md, lib/core), as a Promela model
 * for spin, checked exhaustively at small bounds by scripts/model-check.sh (`npm run model`).
 * model/README.md says what each configuration checks, what it found, and where the model and
 * the code may differ.
 *
 * What is modelled: one lock object in a store with conditional writes (create-if-absent,
 * replace-if-etag), NCALLS acquisitions ("calls") running at once, each in a process with its own
 * estimate of the store's clock, an operator, and the faults. A call acquires as Lock.tryAcquire
 * does since issue 24: calls for one owner take turns; a live lease of the same instance means
 * held; read; absent -> create; released or expired -> replace; ours -> take over at once (a
 * retry of the same invocation); held -> busy, or replace it when this run is a newer tick's.
 * Its token, chosen from the clock as the read left it (above every token seen, at least the
 * latest the store's clock may read), is written at once, and the lease is handed out as the
 * write lands (issue 25); the token is handed out later, once the store's clock has passed it
 * (lower > T) and while the lease is live for its holder (lease.fencingToken()). It then renews,
 * writes a fenced target with its token (fencedPut: HEAD, then PUT If-Match), and releases
 * (expires_at 0, token kept). The faults: a lost answer (the write
 * lands, the answer does not; the call settles by reading its body back), a crash at any step
 * (the call is retried with the same owner and nothing else remembered), deletion of the lock
 * object, and the record before the current one written back from outside. The operator
 * force-releases, pauses (plainly, or `now`) and resumes, each one read and one conditional write.
 *
 * Time is the store's clock `now`, in steps, advanced by its own process up to MAXT. A process
 * knows it only as an interval [lower, upper] that holds it (lib/core/server-clock.ts), up to W
 * on either side. Each use takes the interval that is worst for safety where one exists: a
 * contender judges expiry by lower = now (the earliest it may take over), a holder's deadline
 * is expires_at - M (the latest it may believe it holds), the wait ends at the first now > T;
 * the token, which no choice makes worst, takes every upper in now..now+W. The margin M is
 * applied as timing.ts does: the holder ends its lease M early, a contender judges it M late.
 *
 * The properties, in the words of the invariants (asserts, checked wherever the state they speak
 * of changes, so that they hold in every reachable state):
 *
 *  MUTEX  Never two calls that each believe they hold a live lease (handed out, its deadline not
 *         passed by their own view), apart from the admitted windows: a run that was replaced,
 *         force-released or paused `now`, or whose record was deleted or written back from
 *         outside, believes it holds its lease until it next writes (or its deadline passes).
 *         Such a run carries the flag `ousted`, and MUTEX leaves it out explicitly.
 *  LEASE  A lease is handed out the moment its write lands: never over at the store by then
 *         (not `ousted`), apart from one admitted window: `revived`, a call whose write landed
 *         with its answer lost, and whose record was written over and then written back from
 *         outside before it settled: the settle read finds its own body, as StoreSession's settle
 *         compares bodies (STRICT_REVIVED shows it).
 *  TOKENS A token is handed out only once the store's clock has passed it, and above every token
 *         handed out before, also across deletion and write-back, apart from admitted windows,
 *         each flagged and left out explicitly: `ousted`, a run whose lease was ended at the
 *         store unseen (W1); `stale`, an acquisition whose read came before a deletion or
 *         write-back from outside; `first_outside`, a deletion or write-back that came before the
 *         store's clock passed the higher token, when a token written may not yet be handed out
 *         (STRICT_TOKENS shows these two).
 *  FENCE  The fenced target never accepts a write whose token is below one it accepted.
 *
 * BLIND adds the one-request acquisition a store with partial updates offers (DynamoDB's
 * UpdateItem; `LockStore.take`): instead of reading first, a call may take a record that is
 * released and not paused in one conditional write, whose token is the stored one plus one and
 * whose expires_at comes from a clock whose offset it does not know yet (no estimate: up to W
 * either way, TTL + W at most; a lease already over by the answer's clock is not handed out).
 * A failed condition answers with the item, a read at that instant: the normal path goes on from
 * it. The lease is handed out as the take lands; its token (stored + 1, which an outside
 * write-back may have put below one handed out before) is handed out only after a raise: a
 * renewal, conditional on the lease's record, that writes next_token_at's token (the clock as it
 * read when the take was sent, as the read-first path's token is the clock at its read), then
 * the wait.
 *
 * Configurations (spin -D): HASH_ETAGS (an etag is a function of the body, as S3's MD5 ETag is;
 * default: unique per write), SAMEINST (calls 0 and 1 are two concurrent calls on one Lock
 * instance: one owner), and the bounds below. The known defects, put back one at a time, each
 * of which the check must find:
 *  NO_WAIT          (a) a token is handed out before the store's clock has passed it;
 *  LATE_LEASE       (b) issue 24 finding 4, the order of b0dc18d: write, then wait for the token,
 *                   then hand the lease out without looking again, so a run replaced (or taken
 *                   over) while it waited starts after its lease was over at the store;
 *  SELF_TAKEOVER    (c) finding 5: concurrent calls on one instance do not take turns, so the
 *                   second takes the first one's live lease over "from its own owner";
 *  FENCE_SAME_BYTES (d) finding 1: with HASH_ETAGS, fencedPut writes identical bytes, so the
 *                   target's etag does not change and a stale holder's If-Match passes.
 *  NO_RAISE         (e) with BLIND, a taken lease's token (stored + 1) is handed out without
 *                   the raise: after a write-back of an older released record, it is not above
 *                   a token handed out before.
 */

#ifndef NCALLS
#define NCALLS 2
#endif
#ifndef MAXT
#define MAXT 7
#endif
/* Lease length, skew margin, width of a clock estimate on either side (store clock steps). */
#ifndef TTL
#define TTL 3
#endif
#ifndef M
#define M 1
#endif
#ifndef W
#define W 1
#endif
/* Acquisitions per call (crashes included), rounds per attempt, renewals per lease. */
#ifndef MAXACQ
#define MAXACQ 1
#endif
#ifndef MAXROUNDS
#define MAXROUNDS 1
#endif
#ifndef MAXRENEW
#define MAXRENEW 1
#endif
/* Fenced writes per lease (0 or 1). */
#ifndef FENCED
#define FENCED 1
#endif
/* Fault and operator budgets for one run of the search. */
#ifndef DELETES
#define DELETES 1
#endif
#ifndef WRITEBACKS
#define WRITEBACKS 1
#endif
#ifndef LOSTS
#define LOSTS 1
#endif
#ifndef CRASHES
#define CRASHES 1
#endif
#ifndef REPLACES
#define REPLACES 1
#endif
#ifndef OPS
#define OPS 1
#endif
/* Blind takes (BLIND) per search: each call's first attempt may take instead of reading. */
#ifndef TAKES
#define TAKES 2
#endif

#define NONE 255
/* Owners: an instance per call, or calls 0 and 1 on one instance; the operator after them. */
#ifdef SAMEINST
#define INST(c) ((c) < 2 -> 0 : (c) - 1)
#define OTHER(c) (1 - (c))
#define SHARES(c) ((c) < 2)
#else
#define INST(c) (c)
#define OTHER(c) (c)
#define SHARES(c) false
#endif
#define OPER 9

/* ---- the lock object ---- */
bool r_present;
byte r_tok, r_exp, r_own;
bool r_paused;
short r_etag;
byte r_wc = NONE; /* ghost: the call whose lease this record is, if any */

/* ---- the record before the current one, which a write-back from outside restores ---- */
bool o_have;
byte o_tok, o_exp, o_own;
bool o_paused;
short o_etag;
byte o_wc = NONE;

/* ---- the fenced target: the token in its metadata, its etag, and (ghost) the highest accepted ---- */
byte tgt_tok;
#ifdef HASH_ETAGS
short tgt_etag = 1; /* it exists: an earlier run's output, written with token 0 */
#else
short tgt_etag;
#endif
byte tgt_max;

/* ---- time, etags, budgets ---- */
byte now;
short ectr;
byte last_token; /* ghost: the highest token handed out */
byte first_outside = NONE; /* ghost: when the first deletion or write-back from outside came */
byte del_budget = DELETES, wb_budget = WRITEBACKS, lost_budget = LOSTS;
byte crash_budget = CRASHES, repl_budget = REPLACES, op_budget = OPS;
byte take_budget = TAKES;

/* ---- per call: 0 idle, 1 written, its answer not heard yet, 2 lease handed out ---- */
byte hold[NCALLS];
byte tokc[NCALLS];
byte dl[NCALLS]; /* the holder's deadline, in store time: expires_at - M */
bool ousted[NCALLS];
bool crashed[NCALLS];
/* ghost: its own record, in the same bytes, was written back from outside while it waited for its token */
bool revived[NCALLS];
/* ghost: its read came before a deletion or write-back from outside, and its write has not landed yet */
bool stale[NCALLS];
/* ghost: between its read and its write */
bool between[NCALLS];
/* its token is one a blind take wrote (stored + 1), not yet raised to the store's clock */
bool unraised[NCALLS];
/* the call of instance 0 whose acquisition is under way (SAMEINST): calls for one owner take turns */
byte turn = NONE;

#define LIVE(d) (hold[d] == 2 && now < dl[d] && !ousted[d])
#if NCALLS == 2
#define MUTEX_OK (!(LIVE(0) && LIVE(1)))
#else
#define MUTEX_OK (!(LIVE(0) && LIVE(1)) && !(LIVE(0) && LIVE(2)) && !(LIVE(1) && LIVE(2)))
#endif

/* The token's wait: the store's clock has surely passed it (NO_WAIT leaves it out). */
#ifndef NO_WAIT
#define READY && now > T
#else
#define READY
#endif

#define FREE(exp, at) ((exp) == 0 || (at) > (exp) + M)
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#define MIN(a, b) ((a) < (b) -> (a) : (b))

/* Each write gets a new etag, or (HASH_ETAGS) the same for the same body. */
inline set_etag() {
#ifdef HASH_ETAGS
  r_etag = ((r_tok * 32 + r_exp) * 16 + r_own) * 2 + r_paused
#else
  ectr++;
  r_etag = ectr
#endif
}

inline land(tok, exp, own, paused, wc) {
  o_have = r_present; o_tok = r_tok; o_exp = r_exp; o_own = r_own; o_paused = r_paused; o_etag = r_etag; o_wc = r_wc;
  r_present = true;
  r_tok = tok;
  r_exp = exp;
  r_own = own;
  r_paused = paused;
  r_wc = wc;
  set_etag()
}

/* The record is about to be written over by an admitted takeover: its run is in the admitted window. */
inline oust_current() {
  if
  :: r_present && r_wc != NONE && hold[r_wc] > 0 && tokc[r_wc] == r_tok -> ousted[r_wc] = true
  :: else -> skip
  fi
}

/* The next token: above every token seen, and at least the latest the store's clock may read. */
inline next_token(t, seen) {
  next_token_at(t, seen, now)
}

/* The token from the clock as it read at time `at` (a raise: as its take was sent), an upper bound
   of it as any in at..at+W: the raise's token waits no longer than from its take. */
inline next_token_at(t, seen, at) {
  select (b : 0 .. W);
  t = MAX(seen + 1, at + b);
  b = 0
}

/* Calls between their read and their write when the object is deleted or written back from outside. */
inline mark_stale() {
  for (i : 0 .. NCALLS - 1) {
    if
    :: between[i] -> stale[i] = true
    :: else -> skip
    fi
  }
  i = 0
}

proctype Clock() {
end:
  do
  :: atomic { now < MAXT -> now++ }
  od
}

proctype Faults() {
  byte i;
end:
  do
  :: atomic {
       del_budget > 0 && r_present ->
       del_budget--;
       first_outside = MIN(first_outside, now);
       oust_current();
       o_have = r_present; o_tok = r_tok; o_exp = r_exp; o_own = r_own; o_paused = r_paused; o_etag = r_etag; o_wc = r_wc;
       mark_stale();
       r_present = false; r_tok = 0; r_exp = 0; r_own = 0; r_paused = false; r_etag = 0; r_wc = NONE
     }
  :: atomic {
       wb_budget > 0 && o_have ->
       wb_budget--;
       first_outside = MIN(first_outside, now);
       oust_current();
       mark_stale();
       if
       :: o_wc != NONE && hold[o_wc] == 1 && tokc[o_wc] == o_tok -> revived[o_wc] = true
       :: else -> skip
       fi;
       r_present = true; r_tok = o_tok; r_exp = o_exp; r_own = o_own; r_paused = o_paused; r_wc = o_wc;
#ifdef HASH_ETAGS
       r_etag = o_etag;
#else
       ectr++; r_etag = ectr;
#endif
       o_have = false; o_tok = 0; o_exp = 0; o_own = 0; o_paused = false; o_etag = 0; o_wc = NONE
     }
  :: atomic {
       crash_budget > 0 ->
       crash_budget--;
       select (i : 0 .. NCALLS - 1);
       crashed[i] = true; /* it takes effect at the call's next step, whichever that is */
       i = 0
     }
  od
}

/* force-release, pause (plain or now) and resume: one read, then one write conditional on it. */
proctype Operator() {
  bool s_present, s_paused, s_free;
  byte hi, t, b;
  short s_etag;
end:
  do
  :: op_budget > 0 ->
     atomic {
       op_budget--;
       s_present = r_present; s_paused = r_paused; s_etag = r_etag; s_free = FREE(r_exp, now);
       hi = MAX(hi, r_tok)
     }
     if
     :: s_present ->
        if
        :: true -> atomic { /* force-release: a higher token, released */
             next_token(t, hi);
             if
             :: r_present && r_etag == s_etag -> oust_current(); land(t, 0, OPER, r_paused, NONE); hi = t
             :: else -> skip
             fi;
             t = 0
           }
        :: true -> atomic { /* pause --now: the same, paused; a plain pause when the lock is not held */
             if
             :: !s_free ->
                next_token(t, hi);
                if
                :: r_present && r_etag == s_etag -> oust_current(); land(t, 0, OPER, true, NONE); hi = t
                :: else -> skip
                fi;
                t = 0
             :: else ->
                if
                :: r_present && r_etag == s_etag -> land(r_tok, r_exp, r_own, true, r_wc)
                :: else -> skip
                fi
             fi
           }
        :: true -> atomic { /* plain pause: the holder keeps its lease, and rebases its next write over it */
             if
             :: r_present && r_etag == s_etag && !s_paused -> land(r_tok, r_exp, r_own, true, r_wc)
             :: else -> skip
             fi
           }
        :: true -> atomic { /* resume */
             if
             :: r_present && r_etag == s_etag && s_paused -> land(r_tok, r_exp, r_own, false, r_wc)
             :: else -> skip
             fi
           }
        fi
     :: else -> skip
     fi;
     s_present = false; s_paused = false; s_etag = 0; s_free = false
  :: op_budget == 0 -> break
  od
}

/* What a call forgets when its attempt ends: the search would otherwise tell apart states that differ only in it. */
inline forget() {
  renews = 0; T = 0; myexp = 0; replacing = false; fenced = false; lost = false; go = false;
  s_present = false; s_etag = 0; my_etag = 0; f_tok = 0; f_etag = 0;
  revived[c] = false; stale[c] = false; between[c] = false; unraised[c] = false;
  if
  :: hold[c] == 1 -> hold[c] = 0
  :: else -> skip
  fi;
  if
  :: hold[c] == 0 -> tokc[c] = 0; dl[c] = 0
  :: else -> skip
  fi;
  if
  :: turn == c -> turn = NONE
  :: else -> skip
  fi
}

/* The lease is handed out: LEASE and MUTEX hold at that instant. */
inline hand_out() {
#ifndef STRICT_REVIVED
  assert(!ousted[c] || revived[c]); /* LEASE, but for the admitted window: revived */
#else
  assert(!ousted[c] || (revived[c] && false)); /* LEASE, the window counted */
#endif
  hold[c] = 2;
  dl[c] = myexp - M;
  if
  :: turn == c -> turn = NONE
  :: else -> skip
  fi;
  assert(MUTEX_OK) /* MUTEX */
}

/* The token is handed out (lease.fencingToken() resolves): TOKENS holds at that instant. */
inline hand_out_token() {
  /* TOKENS, but for the admitted windows: a run whose lease was ended at the store unseen
     (ousted), a call whose read came before a deletion or write-back from outside (stale), or
     such a write before the store's clock passed the higher token (first_outside; a revived call's
     write-back is one) */
#if defined(STRICT_TOKENS)
  assert(now > T && (T > last_token || ousted[c]));
#else
  assert(now > T && (T > last_token || ousted[c] || stale[c] || first_outside <= last_token));
#endif
  last_token = MAX(last_token, T);
  stale[c] = false; revived[c] = false
}

proctype Call(byte c) {
  byte acqs, rounds, renews, hi, T, myexp, b, f_tok, taken_at;
  bool s_present, replacing, lost, fenced, go;
  short s_etag, my_etag, f_etag;

end:
  do
  :: atomic { acqs < MAXACQ -> acqs++; rounds = 0 }
     /* Lock.tryAcquire: calls for one owner take turns; then #liveLeaseOf: a live lease of this
        instance means held; then read, decide on what the read shows (judging expiry by the earliest
        the store's clock may read), and choose the token from the clock as the read left it */
read:
     {
#ifdef SAMEINST
       atomic {
#ifndef SELF_TAKEOVER
         SHARES(c) -> (turn == NONE || turn == c) -> turn = c;
#endif
         if
         :: SHARES(c) && hold[OTHER(c)] == 2 && now < dl[OTHER(c)] -> forget(); goto next
         :: else -> skip
         fi
       }
#endif
#ifdef BLIND
       /* LockStore.take: one conditional write over a released record that is not paused, with
          the stored token plus one and an expiry from a clock it has no estimate of yet; a failed
          condition is a read at that instant (the item comes back), so the normal path below is
          what follows it */
       if
       :: atomic {
            take_budget > 0 && r_present && r_exp == 0 && !r_paused ->
            take_budget--;
            select (b : 0 .. 2 * W);
            T = r_tok + 1; myexp = now + TTL + b - W; b = 0; taken_at = now;
            hi = MAX(hi, T);
            land(T, myexp, INST(c), false, c);
            hold[c] = 1; tokc[c] = T; ousted[c] = false; unraised[c] = true;
            my_etag = r_etag;
            if
            :: lost_budget > 0 -> lost_budget--; lost = true
            :: now < myexp - M -> hand_out()
            :: else -> hold[c] = 0; forget(); goto next /* over by the answer's clock: not handed out */
            fi
          }
          goto settle
       :: true
       fi;
#endif
       atomic {
         hi = MAX(hi, r_tok);
         go = true;
         if
         :: !r_present -> skip /* create */
         :: r_present && r_paused -> go = false /* the lifecycle's skipIf: the job is paused */
         :: r_present && !r_paused && FREE(r_exp, now) -> skip /* released or expired */
         :: r_present && !r_paused && !FREE(r_exp, now) && r_own == INST(c) ->
            skip /* ours: a retry of the same invocation takes it over at once */
         :: r_present && !r_paused && !FREE(r_exp, now) && r_own != INST(c) && repl_budget > 0 ->
            replacing = true /* this run is a newer tick's: replaceIf */
         :: r_present && !r_paused && !FREE(r_exp, now) && r_own != INST(c) -> go = false /* held */
         fi;
         if
         :: go -> s_present = r_present; s_etag = r_etag; next_token(T, hi); myexp = T + TTL; between[c] = true
         :: else -> forget(); goto next
         fi
       }
       /* the conditional write, at once; unless its answer is lost, the lease is handed out as it lands */
       atomic {
         between[c] = false;
         if
         :: (!s_present && !r_present) || (s_present && r_present && r_etag == s_etag) ->
            if
            :: replacing -> oust_current(); repl_budget--
            :: else -> skip
            fi;
            land(T, myexp, INST(c), r_paused, c);
            hold[c] = 1; tokc[c] = T; ousted[c] = false;
            my_etag = r_etag; hi = MAX(hi, T);
            s_present = false; s_etag = 0; replacing = false;
            if
            :: lost_budget > 0 -> lost_budget--; lost = true
            :: true ->
#ifndef LATE_LEASE
               hand_out()
#else
               skip
#endif
            fi
         :: else -> /* 412, or 404 for an If-Match on a missing key: read again, or give up */
            forget();
            rounds++;
            if
            :: rounds < MAXROUNDS -> goto read
            :: else -> goto next
            fi
         fi
       }
settle:
       if
       :: lost ->
          /* the answer was lost: settle by reading; our own body means our write landed */
          atomic {
            lost = false;
            if
            :: r_present && r_tok == T && r_exp == myexp && r_own == INST(c) ->
               my_etag = r_etag;
#ifndef LATE_LEASE
               hand_out()
#else
               skip
#endif
            :: else -> forget(); goto next
            fi
          }
       :: else -> skip
       fi;
#ifdef LATE_LEASE
       /* b0dc18d: the write first, then the wait, then the lease handed out without looking again */
       now > T;
       atomic { hand_out() }
#endif
       /* holding: renew, write the fenced target with the token (read once the store's clock has
          passed it; the PUT also as a zombie, without looking at the clock again), release */
holding:
       do
       :: atomic {
            renews < MAXRENEW && now < dl[c] ->
            renews++;
            if
            :: r_present && (r_etag == my_etag || (r_tok == T && r_own == INST(c) && r_exp == myexp)) ->
               myexp = now + TTL;
               land(T, myexp, INST(c), r_paused, c);
               my_etag = r_etag;
               dl[c] = myexp - M;
               ousted[c] = false; /* its admitted window, if any, ends with a write that lands */
               assert(MUTEX_OK) /* MUTEX */
            :: else -> hold[c] = 0; forget(); goto next /* lost: taken over, replaced, or deleted */
            fi
          }
#ifdef BLIND
       :: atomic { /* the raise of a taken lease's token: a renewal, conditional on its record, that
                        writes a token from the clock as it read when the take was sent
                        (next_token_at), whose wait follows as any token's */
            unraised[c] && now < dl[c] ->
            if
            :: r_present && (r_etag == my_etag || (r_tok == T && r_own == INST(c) && r_exp == myexp)) ->
               next_token_at(T, hi, taken_at);
               taken_at = 0;
               hi = T;
               myexp = now + TTL;
               land(T, myexp, INST(c), r_paused, c);
               my_etag = r_etag;
               tokc[c] = T;
               dl[c] = myexp - M;
               unraised[c] = false;
               ousted[c] = false;
               assert(MUTEX_OK) /* MUTEX */
            :: else -> hold[c] = 0; forget(); goto next /* lost: taken over, replaced, or deleted */
            fi
          }
#endif
       :: atomic { /* fencedPut given the lease: its token, once the store's clock has passed it (lower > T)
                        and while the lease is live for its holder; then the HEAD */
#ifndef NO_RAISE
            !unraised[c] &&
#endif
            FENCED > 0 && !fenced && now < dl[c] READY ->
            hand_out_token();
            fenced = true; f_tok = tgt_tok; f_etag = tgt_etag
          }
          atomic {
            if
            :: f_tok > T -> skip /* refused: a higher token wrote it */
            :: f_tok <= T && tgt_etag == f_etag -> /* PUT If-Match the etag it read */
               assert(T >= tgt_max); /* FENCE */
               tgt_tok = T;
               tgt_max = MAX(tgt_max, T);
#ifdef HASH_ETAGS
#ifdef FENCE_SAME_BYTES
               tgt_etag = 1 /* the same output bytes every time: the same MD5 */
#else
               tgt_etag = 1 + T /* each fenced write's bytes differ */
#endif
#else
               ectr++;
               tgt_etag = ectr
#endif
            :: f_tok <= T && tgt_etag != f_etag -> skip /* 412 */
            fi;
            f_tok = 0; f_etag = 0
          }
       :: atomic {
            /* release: expires_at 0, the token kept; a lease that ran out frees the record only if still ours */
            if
            :: r_present && (r_etag == my_etag || (r_tok == T && r_own == INST(c) && r_exp == myexp)) ->
               land(T, 0, INST(c), r_paused, NONE)
            :: else -> skip
            fi;
            hold[c] = 0;
            forget();
            goto next
          }
       od;
next:
       taken_at = 0
     } unless {
       crashed[c] ->
       atomic { /* a crash at any step: the run is gone, and so is everything the process knew; the
                   invocation is retried (same owner), once more than its acquisitions */
         crashed[c] = false; acqs--; hold[c] = 0; ousted[c] = false; hi = 0; rounds = 0; taken_at = 0;
         forget()
       }
     }
  :: atomic { acqs == MAXACQ -> crashed[c] = false } -> break
  od
}

init {
  byte c;
  atomic {
    run Clock();
    run Faults();
    run Operator();
    for (c : 0 .. NCALLS - 1) {
      run Call(c)
    }
    c = 0
  }
}
