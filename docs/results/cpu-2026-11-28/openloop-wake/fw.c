#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
struct sattr { uint32_t size, policy; uint64_t flags; int32_t nice; uint32_t prio; uint64_t runtime, deadline, period; uint32_t umin, umax; };
static uint64_t now_ns(void){struct timespec ts;clock_gettime(CLOCK_MONOTONIC,&ts);return ts.tv_sec*1000000000ULL+ts.tv_nsec;}
static int cmp(const void*a,const void*b){uint64_t x=*(uint64_t*)a,y=*(uint64_t*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  double rate=atof(argv[1]), secs=atof(argv[2]); long slice_us=atol(argv[3]); int partner=atoi(argv[4]);
  volatile uint32_t *w = mmap(NULL,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  pid_t c=0;
  if(partner){ c=fork(); if(!c){ uint32_t seen=0; for(;;){ uint32_t v=__atomic_load_n(w,__ATOMIC_SEQ_CST); if(v==seen){ for(int i=0;i<2000;i++) __builtin_ia32_pause(); v=__atomic_load_n(w,__ATOMIC_SEQ_CST); if(v==seen) syscall(SYS_futex,w,FUTEX_WAIT,seen,NULL,NULL,0);} seen=__atomic_load_n(w,__ATOMIC_SEQ_CST);} } }
  if(slice_us){struct sattr a; memset(&a,0,sizeof a); a.size=sizeof a; a.runtime=slice_us*1000; syscall(SYS_sched_setattr,0,&a,0);}
  prctl(PR_SET_TIMERSLACK,1000UL,0,0,0);
  double iv=1e9/rate; uint64_t t0=now_ns()+1000000, tend=t0+(uint64_t)(secs*1e9), n=0;
  uint64_t *l=malloc(sizeof(uint64_t)*(size_t)(rate*secs+10));
  for(;;){uint64_t next=t0+(uint64_t)llround(n*iv),t; if(next>=tend)break;
    struct timespec ts={next/1000000000ULL,next%1000000000ULL};
    while((t=now_ns())<next && clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&ts,NULL)==EINTR);
    t=now_ns(); l[n++]=t>next?t-next:0;
    if(partner){ __atomic_add_fetch(w,1,__ATOMIC_SEQ_CST); syscall(SYS_futex,w,FUTEX_WAKE,1,NULL,NULL,0);} }
  if(c){kill(c,SIGKILL); waitpid(c,NULL,0);}
  qsort(l,n,8,cmp);
  printf("slice=%ld partner=%d p50=%.1fus p99=%.1fus\n",slice_us,partner,l[n/2]/1e3,l[(size_t)(n*0.99)]/1e3);
}
