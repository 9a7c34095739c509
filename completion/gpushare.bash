# bash completion for gpushare. The commands and their options are read from
# `gpushare --help` and `gpushare <command> --help` when completing, so they
# are always those of the installed binary.
_gpushare() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} cmd="" i words
	for ((i = 1; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} != -* ]]; then
			cmd=${COMP_WORDS[i]}
			break
		fi
	done
	if [[ -z $cmd ]]; then
		words=$("${COMP_WORDS[0]}" --help 2>/dev/null |
			awk '/^Commands:/ { on = 1; next } on && /^$/ { exit } on { print $1 }')
		if [[ $cur == -* ]]; then words="--help --version"; fi
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	case $prev in
	--out | --pipe-dir | --log-dir | --mps-pipe-dir | --state-dir | --hpc-job-mapping-dir)
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return
		;;
	esac
	if [[ $cmd == mps && $COMP_CWORD -eq $((i + 1)) && $cur != -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "start stop status set" -- "$cur")
		return
	fi
	if [[ $cmd == slurm && $COMP_CWORD -eq $((i + 1)) && $cur != -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "prolog epilog" -- "$cur")
		return
	fi
	if [[ $cur == -* ]]; then
		words=$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u)
		mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
		return
	fi
	if [[ $cmd == report && $prev != --* ]]; then
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
		return
	fi
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
}
complete -F _gpushare gpushare
