/*
 * sequencer.pml -- Promela model of Peerlog's elected sequencer:
 * leader election with terms and majority quorum (Raft's rules restricted
 * to assigning items to sequence numbers), over a lossy, reordering,
 * duplicating network, with crash/restart of voters.
 *
 * Properties (assertions, so one safety run checks all of them):
 *   P1 election safety : at most one leader per term          leaderOfTerm[]
 *   P2 no fork         : never two different items committed at one seq,
 *                        by any voter (leader or follower)     committed[]
 *   P3 leader completeness (extra): a new leader of term t holds every
 *                        item committed in a term < t          committedIn[]
 *   P4 no term without an election (-DPREVOTE): a voter only ever adopts a
 *                        term some voter campaigned in, so a pre-vote round
 *                        alone raises no term and deposes no leader
 *                                                              maxCampaign
 *
 * -DPREVOTE adds pre-vote (Raft thesis 9.6): a timeout makes a voter a
 * pre-candidate at its current term, which campaigns only once a majority
 * granted PreVote(term + 1).  Check-quorum needs no step of its own: a
 * leader stepping down in its term with its vote and log kept is the
 * leader-crash step below, which may happen at any time.
 *
 * Deliberately broken variants (each must yield a counterexample):
 *   -DBUG_VOTE_TWICE       a voter ignores votedFor, so grants twice a term
 *   -DBUG_COMMIT_OLD_TERM  a leader commits by counting replicas of an
 *                          older-term entry (drops Raft 5.4.2's rule)
 *   -DBUG_STALE_TRUNCATE   a follower drops its suffix on every Append it
 *                          accepts, conflicting or not
 *   -DBUG_LEARN_TO_LASTSEQ a follower commits up to min(leaderCommit,
 *                          lastSeq) instead of the last seq the Append
 *                          vouched for
 *   -DBUG_PREVOTE_BUMPS_TERM (with -DPREVOTE) a pre-candidate raises its
 *                          term when it starts the pre-vote round
 *   -DBUG_PREVOTE_OBSERVES_TERM (with -DPREVOTE) a voter adopts the term a
 *                          PreVoteRequest proposes, as if it were a
 *                          RequestVote: a rejoining voter deposes the leader
 *   (-DNO_P1 / -DNO_P3 switch those assertions off, to see P2 fail too.)
 *
 * Bounds and build switches are in the #ifndef block below; MODEL.md
 * explains what is covered and what is abstracted, check.sh runs it all.
 */

/* ---------------- bounds (override with spin -D...) ---------------- */
#ifndef N
#define N        3      /* voters; CI uses 3.  2..7 (3-bit ids) */
#endif
#ifndef MAXSEQ
#define MAXSEQ   2      /* log slots per voter: seq 1..MAXSEQ (<= 3) */
#endif
#ifndef MAXTERM
#define MAXTERM  3      /* no election past this term (<= 7) */
#endif
#ifndef NITEMS
#define NITEMS   2      /* distinct items ever proposed, ids 1..NITEMS */
#endif
#ifndef MAXMSG
#define MAXMSG   2      /* distinct messages in flight (1..4) */
#endif

#define MAJ      (N/2 + 1)
#define NONE     7      /* votedFor: nobody (fits the 3-bit id field) */

#define FOLLOWER  0
#define CANDIDATE 1
#define LEADER    2
#define PRECAND   3     /* -DPREVOTE: asking for pre-votes, term unchanged */

/* Message types; 0 marks an empty bag slot. */
#define RV      1       /* RequestVote(term, lastSeq, lastTerm)              */
#define VOTE    2       /* Vote(term, granted)                                */
#define APP     3       /* Append(term, prevSeq, prevTerm, item, itemTerm,    */
                        /*        leaderCommit); item 0 = no entry            */
#define APPREP  4       /* AppendReply(term, success, matchSeq)               */
#define PRV     5       /* PreVoteRequest(term + 1, lastSeq, lastTerm)        */
#define PVOTE   6       /* PreVote(term, granted): granted echoes the proposed */
                        /* term, a denial carries the replier's own term      */

/*
 * A message is one int, 3 bits per field.  Packing lets the bag be a
 * sorted array, so each set of in-flight messages has exactly one
 * representation: reordering costs no states beyond choosing which slot
 * to deliver.
 */
#define PACK(t,s,d,tm,a,b,c,dd,e) \
	(((t)<<24)|((d)<<21)|((s)<<18)|((tm)<<15)|((a)<<12)|((b)<<9)|((c)<<6)|((dd)<<3)|(e))
#define M_TYPE(m)  (((m)>>24)&7)
#define M_DST(m)   (((m)>>21)&7)
#define M_SRC(m)   (((m)>>18)&7)
#define M_TERM(m)  (((m)>>15)&7)
#define M_A(m)     (((m)>>12)&7)
#define M_B(m)     (((m)>>9)&7)
#define M_C(m)     (((m)>>6)&7)
#define M_D(m)     (((m)>>3)&7)
#define M_E(m)     ((m)&7)

typedef Voter {
	/* persistent: survives a crash */
	byte term;                 /* currentTerm */
	byte votedFor;             /* NONE or a voter id, for `term` */
	byte lastSeq;              /* log holds seq 1..lastSeq */
	byte item[MAXSEQ+2];       /* log[seq].item; slots 0 and > lastSeq are 0 */
	byte eterm[MAXSEQ+2];      /* log[seq].term; likewise 0 outside the log */
	/* volatile: lost by a crash */
	byte role;
	byte commit;               /* commitSeq -- kept only while leader, see
	                              learn_commit */
	byte votes;                /* candidate: bitmask of granted votes */
	byte matchSeq[N];          /* leader: highest seq known replicated */
};

Voter v[N];
int   bag[MAXMSG];            /* sorted descending, empty (0) slots last */

/* ghost state for the properties */
byte leaderOfTerm[MAXTERM+1]; /* voter id + 1; 0 = none yet */
byte committed[MAXSEQ+1];     /* item committed at seq; 0 = none */
byte committedIn[MAXSEQ+1];   /* lowest term whose leader (directly, or via
                                 a follower it told) committed that seq */
byte nextItem;                /* items proposed so far */
byte maxCampaign;             /* highest term any voter campaigned in (P4); in
                                 a correct model it equals the highest term,
                                 so it adds no states */

/*
 * Reachability probes (check.sh builds each with -DPROBE=k and expects a
 * "counterexample"): they show the checked model really gets to the
 * situations the properties are about, i.e. that it is not vacuous.
 *   1 a follower learns that seq MAXSEQ is committed
 *   2 a follower drops a conflicting suffix
 *   3 a late Append arrives for an entry already followed by others
 *   4 a leader commits an older term's entry via one of its own term
 *   5 a leader of term MAXTERM is elected after something was committed
 *   6 a leader is elected while a stale leader of an older term is in office
 *   7 (-DPREVOTE) a leader gets a PreVoteRequest for a higher term and
 *     stays leader of its term
 */
#ifdef PROBE
hidden byte probe_not_reached = 0;
#define REACHED(id, cond) \
	if \
	:: PROBE == id && (cond) -> assert(probe_not_reached) \
	:: else -> skip \
	fi
#else
#define REACHED(id, cond) skip
#endif

/* Always 1: they only name the property in pan's "assertion violated"
 * line (check.sh greps for them). */
hidden byte P1_one_leader_per_term = 1;
hidden byte P2_no_fork = 1;
hidden byte P3_leader_completeness = 1;
hidden byte P4_no_term_without_election = 1;

/* Scratch for d_steps; hidden = not in the state vector. */
hidden int  hm, hmsg;
hidden byte hi, hj, hk, hn, hcnt, hok, hlast;

/* ---------------- network ---------------- */

/*
 * The bag is a SET of messages.  Delivery may consume a message or leave it
 * in flight (= the network duplicated it), so one element stands for any
 * number of identical copies, and sending a message already in flight adds
 * nothing new.  (With -DNODUP delivery always consumes, and a second
 * identical copy sent while the first is in flight is simply lost.)  Loss
 * is the Network process.  A full bag loses the new message, which the
 * network may do anyway: the bound MAXMSG removes behaviours
 * (concurrency), it adds none.
 */
inline insert() {
	hi = 0;
	do
	:: hi < MAXMSG && bag[hi] > hm -> hi++
	:: else -> break
	od;
	if
	:: hi < MAXMSG && bag[hi] != hm && bag[MAXMSG-1] == 0 ->
		hj = MAXMSG - 1;
		do
		:: hj > hi -> bag[hj] = bag[hj-1]; hj--
		:: else -> break
		od;
		bag[hi] = hm
	:: else -> skip   /* already in flight, or no room (= lost) */
	fi
}

inline send(t, s, d, tm, a, b, c, dd, e) {
	hm = PACK(t, s, d, tm, a, b, c, dd, e);
	insert()
}

/* Take slot k out; shifting left keeps the bag sorted. */
inline unslot(k) {
	hi = k;
	do
	:: hi < MAXMSG - 1 -> bag[hi] = bag[hi+1]; hi++
	:: else -> break
	od;
	bag[MAXMSG-1] = 0
}

/*
 * Drop replies that can never again change anything if delivered: a Vote
 * or AppendReply of an older term than its receiver's; a Vote the receiver
 * cannot count (not candidate of that term, denied, or already counted); a
 * failed AppendReply of the receiver's own term (nothing backs off in this
 * model, see SEND_APPEND); any AppendReply of its term to a follower (which
 * can never lead that term).  Terms only grow and a term's candidacy is
 * never re-entered, so "dead" is permanent: removing them is a loss the
 * network may cause anyway, and keeping them would only let no-op steps
 * split the state space.  Requests are never collected: a stale one still
 * draws a reply carrying the receiver's newer term.
 */
inline gc() {
	hk = 0;
	do
	:: hk < MAXMSG && bag[hk] != 0 ->
		hm = bag[hk];
		hn = M_DST(hm);
		if
		:: (M_TYPE(hm) == VOTE || M_TYPE(hm) == APPREP) &&
		   M_TERM(hm) < v[hn].term -> hok = 1
		/* a granted PreVote counts only if it names the receiver's term
		 * + 1, a denial only if its term is above the receiver's */
		:: M_TYPE(hm) == PVOTE && M_TERM(hm) <= v[hn].term -> hok = 1
		:: M_TYPE(hm) == VOTE && M_TERM(hm) == v[hn].term &&
		   (v[hn].role != CANDIDATE || M_A(hm) == 0 ||
		    (v[hn].votes & (1 << M_SRC(hm)))) -> hok = 1
		:: M_TYPE(hm) == APPREP && M_TERM(hm) == v[hn].term &&
		   (v[hn].role != LEADER || M_A(hm) == 0 ||
		    M_B(hm) <= v[hn].matchSeq[M_SRC(hm)]) -> hok = 1
		:: else -> hok = 0
		fi;
		if
		:: hok -> unslot(hk)   /* uses hi, not hk */
		:: else -> hk++
		fi
	:: else -> break
	od;
	hok = 0; hm = 0; hn = 0; hk = 0
}

/* ---------------- trail replay aid ---------------- */
/* spin -DTRACE -t sequencer.pml prints the state after every step. */
#ifdef TRACE
/* A log is shown as slots 1..3 (item, term); item 0 = empty. */
#if MAXSEQ >= 2
#define LOG3(x) v[x].item[1], v[x].eterm[1], v[x].item[2], v[x].eterm[2], v[x].item[3], v[x].eterm[3]
#else
#define LOG3(x) v[x].item[1], v[x].eterm[1], 0, 0, 0, 0
#endif
inline dump() {
	hi = 0;
	do
	:: hi < N ->
		/* one printf per line: spin indents each printf by process */
		printf("v%d term=%d votedFor=%d role=%d commit=%d votes=%d match=%d,%d,%d log=[i%d t%d][i%d t%d][i%d t%d]\n",
		       hi, v[hi].term, v[hi].votedFor, v[hi].role, v[hi].commit, v[hi].votes,
		       v[hi].matchSeq[0], v[hi].matchSeq[1], v[hi].matchSeq[N-1], LOG3(hi));
		hi++
	:: else -> break
	od;
	hi = 0;
	do
	:: hi < MAXMSG && bag[hi] != 0 ->
		printf("msg type=%d %d->%d term=%d a=%d b=%d c=%d d=%d e=%d\n",
		       M_TYPE(bag[hi]), M_SRC(bag[hi]), M_DST(bag[hi]), M_TERM(bag[hi]),
		       M_A(bag[hi]), M_B(bag[hi]), M_C(bag[hi]), M_D(bag[hi]), M_E(bag[hi]));
		hi++
	:: else -> break
	od;
	printf("committed[1]=%d committed[MAXSEQ]=%d leaderOfTerm[1..]=%d,%d,%d\n",
	       committed[1], committed[MAXSEQ],
	       leaderOfTerm[1], leaderOfTerm[MAXTERM-1], leaderOfTerm[MAXTERM]);
	hi = 0; hj = 0
}
#define DUMP(w) ; printf(w); dump()
#define DTRACE printf("v%d gets type=%d from %d term=%d a=%d b=%d c=%d d=%d e=%d\n", \
	me, M_TYPE(hmsg), M_SRC(hmsg), M_TERM(hmsg), M_A(hmsg), M_B(hmsg), \
	M_C(hmsg), M_D(hmsg), M_E(hmsg))
#else
#define DUMP(w)
#define DTRACE skip
#endif

/* ---------------- symmetry reduction (-DSYMM) ----------------
 * Voters are interchangeable: ids appear only as labels (votedFor, votes,
 * matchSeq index, message src/dst, leaderOfTerm), every voter runs the same
 * code, and the properties do not name a voter.  So after each step the
 * state is replaced by the least (memcmp order) of its N! relabellings.
 * Each Voter_ process keeps its `me`; that is fine because all of them are
 * always at the same control point (the loop head) between steps, so
 * process i simply goes on with whatever voter now sits at v[i].  This
 * is exact (no state is lost, only duplicates are merged) and cuts the
 * stored states by nearly N!.  It is C code, which spin's simulator
 * does not run: replay SYMM trails with ./pan -r, or rerun without SYMM.
 */
#ifdef SYMM
c_code {
typedef struct {
	struct Voter v[N];
	int bag[MAXMSG];
	uchar lot[MAXTERM+1];
} Canon;

static int  sy_perm[5040][N];
static int  sy_inv[5040][N];	/* sy_inv[q][s]: the voter that relabelling q puts in slot s */
static uchar sy_vmap[5040][1<<N];	/* a votes bitmask relabelled by sy_perm[q] */
static int  sy_nperm = 0;

static void sy_gen(int *a, int k) {
	int i, t;
	if (k == N) {
		memcpy(sy_perm[sy_nperm], a, sizeof(int)*N);
		for (i = 0; i < N; i++) sy_inv[sy_nperm][a[i]] = i;
		for (t = 0; t < (1<<N); t++) {
			int j, nv = 0;
			for (j = 0; j < N; j++) if (t & (1 << j)) nv |= 1 << a[j];
			sy_vmap[sy_nperm][t] = nv;
		}
		sy_nperm++;
		return;
	}
	for (i = k; i < N; i++) {
		t = a[k]; a[k] = a[i]; a[i] = t;
		sy_gen(a, k+1);
		t = a[k]; a[k] = a[i]; a[i] = t;
	}
}

/* Voter o relabelled by p, into n. */
static inline void sy_voter(int q, const struct Voter *o, struct Voter *n) {
	const int *p = sy_perm[q];
	int j;
	*n = *o;
	if (o->votedFor != NONE) n->votedFor = p[o->votedFor];
	n->votes = sy_vmap[q][o->votes];
	for (j = 0; j < N; j++) n->matchSeq[p[j]] = o->matchSeq[j];
}

/* memcmp of two voters, inline: most differ in their first bytes. */
static inline int sy_cmp(const struct Voter *a, const struct Voter *b) {
	const uchar *x = (const uchar *) a, *y = (const uchar *) b;
	int i;
	for (i = 0; i < (int) sizeof(struct Voter); i++)
		if (x[i] != y[i]) return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* The bag and the leader ghost relabelled by p, into d. */
static inline void sy_rest(const int *p, Canon *d) {
	int j, k, m, t;
	for (k = 0; k < MAXMSG; k++) {
		m = now.bag[k];
		if (m != 0)
			m = (m & ~((7<<21)|(7<<18)))
			  | (p[(m>>21)&7] << 21) | (p[(m>>18)&7] << 18);
		/* insertion sort, descending, zeros last (as the model keeps it) */
		for (j = k; j > 0 && d->bag[j-1] < m; j--) d->bag[j] = d->bag[j-1];
		d->bag[j] = m;
	}
	for (t = 0; t <= MAXTERM; t++)
		d->lot[t] = now.leaderOfTerm[t] ? p[now.leaderOfTerm[t]-1] + 1 : 0;
}

/* Replaces the state by the least (memcmp order of Canon) of its N!
 * relabellings.  A relabelling is built one voter slot at a time, in the
 * order memcmp reads them, and dropped at the first slot that is already
 * greater than the least so far (most are, often at the first byte, the
 * term, which no relabelling changes); the least is the same as when
 * every relabelling is built whole and compared. */
void canon(void) {
	Canon best, cand;
	struct Voter src[N];
	const int *p, *ip;
	int q, s, c;
	if (sy_nperm == 0) { int a[N]; for (q = 0; q < N; q++) a[q] = q; sy_gen(a, 0); }
	memcpy(src, now.v, sizeof(src));
	memset(&best, 0, sizeof(Canon));	/* padding stays zero for memcmp */
	memset(&cand, 0, sizeof(Canon));
	memcpy(best.v, src, sizeof(src));	/* sy_perm[0] is the identity */
	sy_rest(sy_perm[0], &best);
	for (q = 1; q < sy_nperm; q++) {
		p = sy_perm[q]; ip = sy_inv[q];
		c = 0;
		for (s = 0; s < N && c == 0; s++) {
			if (src[ip[s]].term > best.v[s].term) { c = 1; break; }
			sy_voter(q, &src[ip[s]], &cand.v[s]);
			c = sy_cmp(&cand.v[s], &best.v[s]);
		}
		if (c > 0) continue;
		for (; s < N; s++) sy_voter(q, &src[ip[s]], &cand.v[s]);
		sy_rest(p, &cand);
		if (c < 0 || memcmp(&cand, &best, sizeof(Canon)) < 0) best = cand;
	}
	memcpy(now.v, best.v, sizeof(best.v));
	memcpy(now.bag, best.bag, sizeof(best.bag));
	memcpy(now.leaderOfTerm, best.lot, sizeof(best.lot));
}
}
#define CANON ; c_code { canon(); }
#else
#define CANON
#endif

/* ---------------- helpers ---------------- */

/* Every commit, by a leader or by a follower told by one, goes through
 * this ghost check: it is the sequencer's purpose (DESIGN.md invariant 3:
 * one CID per (group, seq) on every replica). */
inline commit_one(me, s) {
	assert(P2_no_fork && v[me].item[s] != 0 &&
	       (committed[s] == 0 || committed[s] == v[me].item[s]));
	if
	:: committed[s] == 0 || v[me].term < committedIn[s] -> committedIn[s] = v[me].term
	:: else -> skip
	fi;
	committed[s] = v[me].item[s]
}

/* Leader: commit seqs commit+1..n. */
inline commit_upto(me, n) {
	do
	:: v[me].commit < n -> v[me].commit++; commit_one(me, v[me].commit);
		/* an older term's entry committed through a newer one (5.4.2) */
		REACHED(4, v[me].eterm[v[me].commit] < v[me].term)
	:: else -> break
	od;
	skip	/* d_step needs a statement after a loop */
}

/*
 * Follower told by an Append that seqs 1..n are committed: each is
 * checked and recorded, but the follower does not keep a commitSeq.  That
 * is the full model with a crash (which wipes commitSeq) right after every
 * such step, so it adds no behaviour; what it leaves out is only a new
 * leader starting with a commitSeq it learned as follower, i.e. telling
 * followers sooner about seqs that were already committed -- and a new
 * leader missing any committed item is caught by P3 anyway.  Keeping
 * commitSeq on followers multiplied the state space by about 3.5.
 */
inline learn_commit(me, n) {
	hi = 1;
	do
	:: hi <= n -> commit_one(me, hi); hi++
	:: else -> break
	od;
	skip
}

/* Leaving leadership/candidacy forgets its bookkeeping at once, so states
 * differing only in dead volatile data are one state. */
inline clear_volatile(me) {
	v[me].votes = 0;
	v[me].commit = 0;
	hj = 0;
	do
	:: hj < N -> v[me].matchSeq[hj] = 0; hj++
	:: else -> break
	od;
	skip
}

/* Raft: a message with a newer term makes the receiver its follower. */
inline observe_term(me, tm) {
	if
	:: tm > v[me].term ->
		assert(P4_no_term_without_election && tm <= maxCampaign);
		v[me].term = tm;
		v[me].votedFor = NONE;
		v[me].role = FOLLOWER;
		clear_volatile(me)
	:: else -> skip
	fi
}

/* Highest seq n > commit held by a majority whose entry is of the current
 * term (Raft 5.4.2); earlier seqs are committed with it.  A majority
 * holding an older-term entry is not enough: a leader that never saw it
 * can still win and overwrite it (Raft Fig. 8). */
inline leader_advance_commit(me) {
	hn = v[me].lastSeq;
	do
	:: hn > v[me].commit ->
		if
#ifdef BUG_COMMIT_OLD_TERM
		:: true ->
#else
		:: v[me].eterm[hn] == v[me].term ->
#endif
			hcnt = 1;   /* the leader itself */
			hj = 0;
			do
			:: hj < N ->
				if
				:: hj != me && v[me].matchSeq[hj] >= hn -> hcnt++
				:: else -> skip
				fi;
				hj++
			:: else -> break
			od;
			if
			:: hcnt >= MAJ -> commit_upto(me, hn); break
			:: else -> hn--
			fi
		:: else -> hn--
		fi
	:: else -> break
	od;
	skip
}

inline become_leader(me) {
#ifndef NO_P1
	assert(P1_one_leader_per_term &&
	       (leaderOfTerm[v[me].term] == 0 || leaderOfTerm[v[me].term] == me + 1));
#endif
	leaderOfTerm[v[me].term] = me + 1;
	REACHED(5, v[me].term == MAXTERM && committed[1] != 0);
#ifdef PROBE
	/* probe 6: a stale leader of an older term is still in office */
	hj = 0;
	do
	:: hj < N -> REACHED(6, v[hj].role == LEADER); hj++
	:: else -> break
	od;
#endif
	/* P3.  Only items committed in EARLIER terms: a stale candidate may
	 * still win an old term after later terms committed things, but such a
	 * leader can never get a majority to commit anything. */
#ifndef NO_P3
	hj = 1;
	do
	:: hj <= MAXSEQ ->
		assert(P3_leader_completeness &&
		       (committed[hj] == 0 || committedIn[hj] >= v[me].term ||
		        (hj <= v[me].lastSeq && v[me].item[hj] == committed[hj])));
		hj++
	:: else -> break
	od;
#endif
	v[me].role = LEADER;
	clear_volatile(me)
}

/* Start a real election: the only way a term is raised other than by
 * observing one (P4 checks that). */
inline campaign(me) {
	v[me].term++;
	v[me].votedFor = me;
	v[me].role = CANDIDATE;
	clear_volatile(me);
	v[me].votes = 1 << me;
	if
	:: v[me].term > maxCampaign -> maxCampaign = v[me].term
	:: else -> skip
	fi
}

/* ---------------- message handlers ---------------- */

inline on_request_vote(me, m) {
	observe_term(me, M_TERM(m));
	/* the candidate's log is at least as up to date as mine (Raft 5.4.1) */
	hok = (M_B(m) > v[me].eterm[v[me].lastSeq] ||
	       (M_B(m) == v[me].eterm[v[me].lastSeq] && M_A(m) >= v[me].lastSeq));
#ifdef BUG_VOTE_TWICE
	hok = (hok && M_TERM(m) == v[me].term);
#else
	hok = (hok && M_TERM(m) == v[me].term &&
	       (v[me].votedFor == NONE || v[me].votedFor == M_SRC(m)));
#endif
	if
	:: hok -> v[me].votedFor = M_SRC(m)   /* persisted before replying */
	:: else -> skip
	fi;
	send(VOTE, me, M_SRC(m), v[me].term, hok, 0, 0, 0, 0)
}

inline on_vote(me, m) {
	observe_term(me, M_TERM(m));
	if
	:: v[me].role == CANDIDATE && M_TERM(m) == v[me].term && M_A(m) ->
		v[me].votes = v[me].votes | (1 << M_SRC(m));
		hcnt = 0;
		hj = 0;
		do
		:: hj < N ->
			if
			:: v[me].votes & (1 << hj) -> hcnt++
			:: else -> skip
			fi;
			hj++
		:: else -> break
		od;
		if
		:: hcnt >= MAJ -> become_leader(me)
		:: else -> skip
		fi
	:: else -> skip
	fi
}

inline on_append(me, m) {
	observe_term(me, M_TERM(m));
	if
	:: M_TERM(m) < v[me].term ->
		/* stale leader: the reply's newer term makes it step down */
		send(APPREP, me, M_SRC(m), v[me].term, 0, 0, 0, 0, 0)
	:: M_TERM(m) == v[me].term && v[me].role == LEADER ->
		skip    /* two leaders in one term: reachable only if P1 fails */
	:: else ->
		v[me].role = FOLLOWER;          /* a candidate of this term yields */
		clear_volatile(me);
		if
		:: M_A(m) > v[me].lastSeq || v[me].eterm[M_A(m)] != M_B(m) ->
			/* consistency check failed */
			send(APPREP, me, M_SRC(m), v[me].term, 0, 0, 0, 0, 0)
		:: else ->
			hlast = M_A(m);
			if
			:: M_C(m) != 0 ->
				hlast = M_A(m) + 1;
				if
#ifdef BUG_STALE_TRUNCATE
				:: v[me].lastSeq >= hlast ->
					v[me].lastSeq = hlast - 1
#else
				:: v[me].lastSeq >= hlast && v[me].eterm[hlast] != M_D(m) ->
					/* conflict: the suffix from hlast on was never
					 * committed (P3), drop it */
					REACHED(2, true);
					v[me].lastSeq = hlast - 1
				:: v[me].lastSeq >= hlast && v[me].eterm[hlast] == M_D(m) ->
					/* same (seq, term) = same entry (Log Matching);
					 * a late Append must NOT truncate what follows */
					REACHED(3, v[me].lastSeq > hlast)
#endif
				:: else -> skip
				fi;
				/* clear dropped slots so dead data cannot split states */
				hi = v[me].lastSeq + 1;
				do
				:: hi <= MAXSEQ -> v[me].item[hi] = 0; v[me].eterm[hi] = 0; hi++
				:: else -> break
				od;
				if
				:: v[me].lastSeq < hlast ->
					v[me].lastSeq = hlast;
					v[me].item[hlast] = M_C(m);
					v[me].eterm[hlast] = M_D(m)
				:: else -> skip
				fi
			:: else -> skip
			fi;
			/* commit = min(leaderCommit, last seq this Append vouched for);
			 * not min(leaderCommit, lastSeq): entries past hlast may be
			 * leftovers of an old term that the leader has not checked */
#ifdef BUG_LEARN_TO_LASTSEQ
			hn = v[me].lastSeq;
#else
			hn = hlast;
#endif
			if
			:: M_E(m) < hn -> learn_commit(me, M_E(m))
			:: else -> learn_commit(me, hn)
			fi;
			REACHED(1, M_E(m) >= MAXSEQ && hlast == MAXSEQ);
			send(APPREP, me, M_SRC(m), v[me].term, 1, hlast, 0, 0, 0)
		fi
	fi
}

inline on_append_reply(me, m) {
	observe_term(me, M_TERM(m));
	if
	:: v[me].role == LEADER && M_TERM(m) == v[me].term && M_A(m) &&
	   M_B(m) > v[me].matchSeq[M_SRC(m)] ->
		/* replies arrive reordered: matchSeq only moves forward */
		v[me].matchSeq[M_SRC(m)] = M_B(m);
		leader_advance_commit(me)
	:: else -> skip
	fi
}

/* Pre-vote: the request's term is only proposed, so it is not observed.
 * Grant iff it is above mine and the candidate's log is at least as up to
 * date; a leader always denies (it hears from itself).  A follower that
 * heard its leader recently denies too: its denial carries a term no higher
 * than the pre-candidate's, so it does what losing the grant does, and the
 * network may lose any message -- no separate step is needed. */
inline on_prevote_request(me, m) {
	REACHED(7, v[me].role == LEADER && M_TERM(m) > v[me].term);
#ifdef BUG_PREVOTE_OBSERVES_TERM
	observe_term(me, M_TERM(m));
#endif
	hok = (M_B(m) > v[me].eterm[v[me].lastSeq] ||
	       (M_B(m) == v[me].eterm[v[me].lastSeq] && M_A(m) >= v[me].lastSeq));
	hok = (hok && M_TERM(m) > v[me].term && v[me].role != LEADER);
	if
	:: hok -> send(PVOTE, me, M_SRC(m), M_TERM(m), 1, 0, 0, 0, 0)
	:: else -> send(PVOTE, me, M_SRC(m), v[me].term, 0, 0, 0, 0, 0)
	fi
}

/* A denial's term is the replier's own and may be newer; a grant's is the
 * proposed one and must not be observed. */
inline on_prevote(me, m) {
	if
	:: M_A(m) == 0 -> observe_term(me, M_TERM(m))
	:: M_A(m) != 0 && v[me].role == PRECAND && M_TERM(m) == v[me].term + 1 ->
		v[me].votes = v[me].votes | (1 << M_SRC(m));
		hcnt = 0;
		hj = 0;
		do
		:: hj < N ->
			if
			:: v[me].votes & (1 << hj) -> hcnt++
			:: else -> skip
			fi;
			hj++
		:: else -> break
		od;
		if
		:: hcnt >= MAJ -> campaign(me)
		:: else -> skip
		fi
	:: else -> skip
	fi
}

inline deliver(me, m) {
	if
	:: M_TYPE(m) == PRV    -> on_prevote_request(me, m)
	:: M_TYPE(m) == PVOTE  -> on_prevote(me, m)
	:: M_TYPE(m) == RV     -> on_request_vote(me, m)
	:: M_TYPE(m) == VOTE   -> on_vote(me, m)
	:: M_TYPE(m) == APP    -> on_append(me, m)
	:: M_TYPE(m) == APPREP -> on_append_reply(me, m)
	fi
}

/* ---------------- actions ---------------- */

/* Each action is one d_step, i.e. one indivisible transition: the state
 * space holds only states between protocol steps.  Interleaving the N
 * voter processes and the network process yields every order. */

/* Deliver slot k to its destination, consuming it or -- the network
 * duplicated it -- leaving a copy in flight for a later delivery.  Only
 * requests (RV, APP: odd types) get the second option: a duplicated reply
 * is dead once its first copy is handled (gc), so it could add nothing. */
#define DELIVER_CONSUME(k) \
	:: d_step { bag[k] != 0 && M_DST(bag[k]) == me -> \
		hmsg = bag[k]; unslot(k); \
		DTRACE; deliver(me, hmsg); gc() DUMP("== deliver\n") CANON }
#ifdef NODUP
#define DELIVER(k) DELIVER_CONSUME(k)
#else
#define DELIVER(k) DELIVER_CONSUME(k) \
	:: d_step { bag[k] != 0 && M_DST(bag[k]) == me && (M_TYPE(bag[k]) & 1) -> \
		hmsg = bag[k]; \
		DTRACE; deliver(me, hmsg); gc() DUMP("== deliver, keep copy\n") CANON }
#endif

/* A candidate may (re)send its RequestVote to a peer at any time. */
#define SEND_RV(off) \
	:: d_step { v[me].role == CANDIDATE -> \
		send(RV, me, (me+off)%N, v[me].term, v[me].lastSeq, \
		     v[me].eterm[v[me].lastSeq], 0, 0, 0) DUMP("== send RV\n") CANON }

/*
 * A leader may send a peer an Append with any prevSeq p from what the peer
 * has confirmed (matchSeq) up to its own lastSeq, carrying the entry at
 * p+1 if it has one (p = lastSeq: a heartbeat).  Raft sends p = nextIndex-1
 * and backs nextIndex off after a refusal; every such p is in this range,
 * safety never depends on which p is chosen, and so nextIndex need not be
 * state (refusals change nothing at the leader beyond a newer term, see
 * gc).  Below matchSeq nothing is lost: while the peer stays in this term
 * its log up to matchSeq is the leader's, so such an Append could only
 * repeat what the peer already has.
 */
#define SEND_APPEND(off, p) \
	:: d_step { v[me].role == LEADER && p <= v[me].lastSeq && \
	            p >= v[me].matchSeq[(me+off)%N] -> \
		send(APP, me, (me+off)%N, v[me].term, p, v[me].eterm[p], \
		     v[me].item[p+1], v[me].eterm[p+1], v[me].commit) \
		DUMP("== send Append\n") CANON }

#if MAXSEQ == 1
#define SEND_APPENDS(off) SEND_APPEND(off, 0) SEND_APPEND(off, 1)
#elif MAXSEQ == 2
#define SEND_APPENDS(off) SEND_APPEND(off, 0) SEND_APPEND(off, 1) SEND_APPEND(off, 2)
#else
#define SEND_APPENDS(off) SEND_APPEND(off, 0) SEND_APPEND(off, 1) SEND_APPEND(off, 2) \
	SEND_APPEND(off, 3)
#endif
#ifdef PREVOTE
/* A pre-candidate may (re)send its PreVoteRequest to a peer at any time. */
#define SEND_PRV(off) \
	:: d_step { v[me].role == PRECAND -> \
		send(PRV, me, (me+off)%N, v[me].term + 1, v[me].lastSeq, \
		     v[me].eterm[v[me].lastSeq], 0, 0, 0) DUMP("== send PreVote\n") CANON }
#else
#define SEND_PRV(off)
#endif
#define SEND_TO(off) SEND_PRV(off) SEND_RV(off) SEND_APPENDS(off)

proctype Voter_(byte me)
{
end:
	do
	/* Election timeout: any non-leader, any time.  Only MAXTERM stops it,
	 * which is what keeps the state space finite. */
#ifdef PREVOTE
	/* ... starts a pre-vote round at the current term (a candidate whose
	 * election failed, too); campaigning waits for a majority of grants. */
#ifdef BUG_PREVOTE_BUMPS_TERM
	:: d_step { v[me].role != LEADER && v[me].term + 1 < MAXTERM ->
		v[me].term++;
		v[me].votedFor = NONE;
#else
	:: d_step { v[me].role != LEADER && v[me].term < MAXTERM ->
#endif
		v[me].role = PRECAND;
		clear_volatile(me);
		v[me].votes = 1 << me;
		gc() DUMP("== timeout, pre-vote\n") CANON }
#else
	:: d_step { v[me].role != LEADER && v[me].term < MAXTERM ->
		campaign(me);
		gc() DUMP("== timeout\n") CANON }
#endif

	/* The leader takes a fresh item and assigns it the next seq. */
	:: d_step { v[me].role == LEADER && v[me].lastSeq < MAXSEQ && nextItem < NITEMS ->
		nextItem++;
		v[me].lastSeq++;
		v[me].item[v[me].lastSeq] = nextItem;
		v[me].eterm[v[me].lastSeq] = v[me].term DUMP("== new item\n") CANON }

	/* Crash + restart as one step: a voter that is down looks, to everyone
	 * else, like one whose messages are all lost, so only the loss of
	 * volatile state needs modelling.  term, votedFor, log are on disk.
	 * Only a leader's crash needs a step: a follower has no volatile state
	 * left (see learn_commit), and a crashed candidate (a follower of the
	 * same term that voted for itself) can do nothing that the candidate
	 * could not do by never hearing another vote -- both deny every
	 * RequestVote of that term, yield to its Append, time out alike. */
	:: d_step { v[me].role == LEADER ->
		v[me].role = FOLLOWER;
		clear_volatile(me);
		gc() DUMP("== crash\n") CANON }

	SEND_TO(1)
#if N > 2
	SEND_TO(2)
#endif
#if N > 3
	SEND_TO(3)
#endif
#if N > 4
	SEND_TO(4)
#endif
#if N > 5
	SEND_TO(5)
#endif
#if N > 6
	SEND_TO(6)
#endif

	DELIVER(0)
#if MAXMSG > 1
	DELIVER(1)
#endif
#if MAXMSG > 2
	DELIVER(2)
#endif
#if MAXMSG > 3
	DELIVER(3)
#endif
	od
}

/* The adversary: loses any in-flight message.  Partitions, and messages to
 * or from a crashed voter, are such losses. */
#define LOSE(k) :: d_step { bag[k] != 0 -> unslot(k) DUMP("== lost\n") CANON }

proctype Network()
{
end:
	do
	LOSE(0)
#if MAXMSG > 1
	LOSE(1)
#endif
#if MAXMSG > 2
	LOSE(2)
#endif
#if MAXMSG > 3
	LOSE(3)
#endif
	od
}

init {
	atomic {
		hi = 0;
		do
		:: hi < N -> v[hi].votedFor = NONE; hi++
		:: else -> break
		od;
		hi = 0;
		do
		:: hi < N -> run Voter_(hi); hi++
		:: else -> break
		od;
		run Network()
	}
}
