//! The machine, the home and the system, by meaning (POLICY.md, "Spelling
//! does not change meaning", points 10 and 11), found by probing auto mode:
//! administering the machine (services, kernel, mounts, firewall, users,
//! clock, setuid bits, the engine's prunes, tunnels) is privilege; writing
//! the system's privilege and start-up files is writing a protected place;
//! and names known only at run time written beneath the home (an archive,
//! a clone, a directory's contents, an install prefix) may be its
//! protected files. Each class has rows that must stay ordinary beside it:
//! reading the machine, extracting into the project, cloning to a scratch
//! directory.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::Verdict;

use crate::table::{ASK, AUTO, DENY, F, M};
use F::{Container, Host};
use M::Auto;

type Row = (&'static str, M, F, Verdict);

fn decide(row: &Row) -> berth_policy::Decision {
    let (cmd, mode, frame, _) = *row;
    crate::table::case(cmd, &[], &[], &[], mode, frame)
        .inputs()
        .unwrap()
        .decide()
}

fn check(table: &[Row]) {
    crate::table::check_by(
        table,
        decide,
        |r| r.3,
        |r| format!("{:?} ({:?}, {:?})", r.0, r.1, r.2),
    );
}

/// Administering the machine is asked in auto mode; reading it is not.
#[rustfmt::skip]
const ADMINISTERING: &[Row] = &[
    ("systemctl stop docker", Auto, Host, ASK),
    ("systemctl --user enable evil.service", Auto, Host, ASK),
    ("sudo=; systemctl restart sshd", Auto, Host, ASK),
    ("service docker stop", Auto, Host, ASK),
    ("sysctl -w kernel.core_pattern='|/tmp/x'", Auto, Host, ASK),
    ("sysctl kernel.core_pattern='|/tmp/x'", Auto, Host, ASK),
    ("modprobe evil", Auto, Container, ASK),
    ("insmod evil.ko", Auto, Host, ASK),
    ("mount -o remount,rw /", Auto, Container, ASK),
    ("umount /work", Auto, Container, ASK),
    ("iptables -F", Auto, Host, ASK),
    ("nft flush ruleset", Auto, Host, ASK),
    ("ip link set eth0 down", Auto, Host, ASK),
    ("ip route del default", Auto, Container, ASK),
    ("usermod -aG docker agent", Auto, Host, ASK),
    ("passwd root", Auto, Host, ASK),
    ("date -s '2020-01-01'", Auto, Host, ASK),
    ("hostnamectl set-hostname x", Auto, Host, ASK),
    ("chmod u+s ./x", Auto, Host, ASK),
    ("chmod 4755 ./tool", Auto, Container, ASK),
    ("chmod \"$MODE\" ./tool", Auto, Host, ASK),
    ("setcap cap_net_raw+ep ./x", Auto, Host, ASK),
    ("chmod =4755 ./x", Auto, Host, ASK),
    ("find . -perm -4000 -exec chmod 4755 {} \\;", Auto, Host, ASK),
    ("ip l s eth0 down", Auto, Host, ASK),
    ("date -us 2020-01-01", Auto, Host, ASK),
    ("/usr/bin/systemctl stop docker", Auto, Host, ASK),
    ("echo docker | xargs systemctl stop", Auto, Host, ASK),
    ("crontab -r", Auto, Host, ASK),
    ("kill -9 1", Auto, Container, ASK),
    ("init 0", Auto, Host, ASK),
    ("busctl call org.freedesktop.systemd1 /org/freedesktop/systemd1 org.freedesktop.systemd1.Manager PowerOff", Auto, Host, ASK),
    ("docker system prune -af", Auto, Host, ASK),
    ("docker volume prune -f", Auto, Host, ASK),
    ("docker plugin install evil/plugin", Auto, Host, ASK),
    ("ngrok http 8000", Auto, Host, ASK),
    ("npx localtunnel --port 8000", Auto, Host, ASK),
    ("cloudflared tunnel --url http://localhost:8000", Auto, Host, ASK),
    ("tailscale funnel 8000", Auto, Host, ASK),
    ("git cvsexportcommit -c HEAD", Auto, Host, ASK),
    ("install -m 4755 x /tmp/x", Auto, Host, ASK),
    ("install -Dm6755 x /tmp/x", Auto, Container, ASK),
    ("install --mo=u+s x /tmp/x", Auto, Host, ASK),
    ("install -m \"$M\" x /tmp/x", Auto, Host, ASK),
    ("DOCKER_HOST=tcp://10.0.0.5:2375 docker run alpine", Auto, Host, ASK),
    ("mvn exec:exec -Dexec.executable=git -Dexec.args=push", Auto, Host, ASK),
    ("yarn config set yarnPath /tmp/x.js", Auto, Host, ASK),
    ("npm set script-shell /tmp/x", Auto, Host, ASK),
    ("pivot_root . old", Auto, Container, ASK),
    ("switch_root /mnt /sbin/init", Auto, Host, ASK),
];

#[rustfmt::skip]
const READING_THE_MACHINE: &[Row] = &[
    ("systemctl status docker", Auto, Host, AUTO),
    ("systemctl list-units --failed", Auto, Host, AUTO),
    ("service --status-all", Auto, Host, AUTO),
    ("sysctl -a", Auto, Host, AUTO),
    ("mount", Auto, Container, AUTO),
    ("iptables -L -n", Auto, Host, AUTO),
    ("ip addr", Auto, Host, AUTO),
    ("ip r s", Auto, Host, AUTO),
    ("date +%s", Auto, Host, AUTO),
    ("date -u +%Y-%m-%dT%H:%M:%S%Z", Auto, Host, AUTO),
    ("hostname -f", Auto, Host, AUTO),
    ("chmod +x scripts/build.sh", Auto, Host, AUTO),
    ("chmod -R u+rwX,go-w dist", Auto, Host, AUTO),
    ("chmod 0644 README.md", Auto, Host, AUTO),
    ("crontab -l", Auto, Host, AUTO),
    ("kill 4821", Auto, Host, AUTO),
    ("kill -s 1 4821", Auto, Host, AUTO),
    ("docker image ls", Auto, Host, AUTO),
    ("docker rm -f web", Auto, Host, AUTO),
    ("mvn exec:java -Dexec.mainClass=com.example.App", Auto, Host, AUTO),
    ("npm config set browser false", Auto, Host, AUTO),
    ("tailscale status", Auto, Host, AUTO),
];

/// The system's privilege and start-up files are protected places.
#[rustfmt::skip]
const SYSTEM_PLACES: &[Row] = &[
    ("echo 'agent ALL=(ALL) NOPASSWD:ALL' >> /etc/sudoers", Auto, Host, ASK),
    ("tee -a /etc/sudoers.d/agent <<< 'agent ALL=(ALL) NOPASSWD:ALL'", Auto, Container, ASK),
    ("echo '|/tmp/x' > /proc/sys/kernel/core_pattern", Auto, Host, ASK),
    ("echo b > /proc/sysrq-trigger", Auto, Host, ASK),
    ("cp evil.so /lib/x.so && echo /lib/x.so > /etc/ld.so.preload", Auto, Host, ASK),
    ("echo 'root2::0:0::/root:/bin/sh' >> /etc/passwd", Auto, Container, ASK),
    ("cd /etc && echo x > profile.d/a.sh", Auto, Host, ASK),
    ("cp unit.service /etc/systemd/system/", Auto, Host, ASK),
    ("dd of=/etc/shadow if=f", Auto, Host, ASK),
    ("cd / && echo x > etc/ld.so.preload", Auto, Host, ASK),
    ("echo x > /proc/self/root/etc/sudoers", Auto, Host, ASK),
    ("cp x /usr/local/bin/", Auto, Host, ASK),
    ("curl -sSLo /usr/local/bin/kubectl https://example.test/k", Auto, Host, ASK),
    ("ln -s /tmp/evil /usr/bin/git", Auto, Host, ASK),
    ("install -D x /usr/lib/systemd/system/x.service", Auto, Host, ASK),
    ("tar -xzf x.tgz -C /usr/local", Auto, Host, ASK),
    ("cp x.plist ~/Library/LaunchAgents/", Auto, Host, ASK),
    ("rm -rf ~/.local/share/berth", Auto, Host, ASK),
    ("printf x > ~/.config/berth/config.toml", Auto, Host, ASK),
    ("echo 1.2.3.4 example.test >> /etc/hosts", Auto, Container, AUTO),
    // A program named by its path is not written.
    ("pip config edit --site --editor /usr/bin/nano", Auto, Host, AUTO),
    ("virtualenv -p /usr/bin/python3 venv", Auto, Host, AUTO),
    ("cmake -DCMAKE_C_COMPILER=/usr/bin/gcc -S . -B build", Auto, Host, AUTO),
    ("ln -s /usr/bin/python3 venv/bin/python", Auto, Host, AUTO),
    ("tar -xzf node.tgz -C /tmp/scratch", Auto, Host, AUTO),
    ("cat /etc/passwd", Auto, Host, AUTO),
];

/// Unknown names beneath the home, or beneath a hidden directory of it.
#[rustfmt::skip]
const BENEATH_THE_HOME: &[Row] = &[
    ("tar -xf x.tar -C ~", Auto, Host, ASK),
    ("tar -xf x.tar -C ~/.config", Auto, Host, ASK),
    ("bsdtar -xf x.tar -C /home/agent", Auto, Host, ASK),
    ("unzip -o x.zip -d ~/.config", Auto, Host, ASK),
    ("7z x evil.7z -o/home/agent", Auto, Host, ASK),
    ("rsync -a dotfiles/ ~/", Auto, Host, ASK),
    ("cp -r dotfiles/. ~", Auto, Host, ASK),
    ("patch -p1 -d ~ < p.diff", Auto, Host, ASK),
    ("git apply --directory=../home/agent p.diff", Auto, Host, ASK),
    ("git clone https://example.com/r ~/.ssh", Auto, Host, ASK),
    ("git clone . ~/.config/nvim", Auto, Host, ASK),
    ("git init ~/.config/git", Auto, Host, ASK),
    ("git -C ~ init", Auto, Host, ASK),
    ("cd ~ && git init", Auto, Host, ASK),
    ("git -C /home/agent/.config init nvim", Auto, Host, ASK),
    ("git init --template=/tmp/t x", Auto, Container, ASK),
    ("git --work-tree=/home/agent checkout HEAD -- .bashrc", Auto, Host, ASK),
    ("git log --format=x --output=/home/agent/.bashrc", Auto, Host, ASK),
    ("git diff --output=.git/config", Auto, Host, ASK),
    ("git format-patch -o ~/.config/fish HEAD~1", Auto, Host, ASK),
    ("npm install --prefix ~/.local left-pad", Auto, Host, ASK),
    ("pip install --target ~/.local/lib/python3.11/site-packages x", Auto, Host, ASK),
    ("cargo install --root ~/.local ripgrep", Auto, Host, ASK),
    ("gem install --install-dir ~/.gem x", Auto, Host, ASK),
    ("GIT_TRACE=/home/agent/.bashrc git status", Auto, Host, ASK),
    ("GIT_TRACE2_EVENT=.git/hooks/post-checkout git status", Auto, Host, ASK),
    // Ordinary work beside them.
    ("tar xvf backup/src.tar", Auto, Host, AUTO),
    ("tar xf /tmp/scratch/src-snapshot.tar.gz --directory vendor", Auto, Host, AUTO),
    ("unzip dist/release.zip -d /tmp/scratch/sdk", Auto, Host, AUTO),
    ("git clone https://github.com/example-org/project.git /tmp/project-copy", Auto, Host, AUTO),
    ("git worktree add ~/scratch/fix-null -b feature/login", Auto, Host, AUTO),
    ("git log --output=/tmp/log.txt", Auto, Host, AUTO),
    ("cp -r src ~/backup", Auto, Host, AUTO),
    ("rsync -a dist/ /tmp/site/", Auto, Host, AUTO),
    ("npm install --prefix ./tools left-pad", Auto, Host, AUTO),
    ("GIT_TRACE=1 git status", Auto, Host, AUTO),
    ("git init", Auto, Host, AUTO),
    ("git -C sub init", Auto, Host, AUTO),
    ("git init --bare /tmp/scratch/r.git", Auto, Host, AUTO),
];

/// Recursive destruction by meaning: another program's recursive removal,
/// a recursive change of mode or owner reaching the system (through
/// `find -exec … {}` too), the home held for a person.
#[rustfmt::skip]
const DESTRUCTION: &[Row] = &[
    ("cmake -E remove_directory ~", Auto, Host, DENY),
    ("cmake -E rm -rf /", Auto, Container, DENY),
    ("npx rimraf ~", Auto, Host, DENY),
    ("pnpm dlx rimraf /", Auto, Host, DENY),
    ("srm -r ~", Auto, Host, DENY),
    ("wipe -rf /home/agent", Auto, Container, DENY),
    ("trash ~", Auto, Host, DENY),
    ("trash-put ~/..", Auto, Host, DENY),
    ("gio trash ~", Auto, Host, DENY),
    ("gio remove /usr", Auto, Container, DENY),
    ("rsync --remove-source-files -a ~/ /tmp/x/", Auto, Host, DENY),
    ("rsync -a --remove-s /home/agent /tmp/x", Auto, Container, DENY),
    ("git -C ~ clean -fdx", Auto, Host, DENY),
    ("cd ~ && git clean -fdx", Auto, Container, DENY),
    ("git -C / clean -ffdx", Auto, Host, DENY),
    ("git --work-tree=/home/agent clean -f -d", Auto, Host, DENY),
    ("git clean -fdx ~", Auto, Host, DENY),
    ("git -C \"$D\" clean -fdx", Auto, Host, ASK),
    ("cmake -E remove_directory \"$D\"", Auto, Host, ASK),
    ("find / -perm -4000 -exec chmod 777 {} +", Auto, Host, DENY),
    ("find /usr -exec chown nobody {} \\;", Auto, Container, DENY),
    ("chmod -R a-x /usr", Auto, Host, DENY),
    ("chmod -R 000 ~", Auto, Host, ASK),
    ("chown -R nobody ~", Auto, Container, ASK),
    ("find ~ -exec chmod 000 {} +", Auto, Host, ASK),
    ("chattr -R +i /", Auto, Host, DENY),
    ("chattr -R -i /usr", Auto, Container, DENY),
    ("pkill -9 -u $USER", Auto, Host, DENY),
    ("killall -u agent", Auto, Host, DENY),
    ("pkill --uid=1000", Auto, Container, DENY),
    ("pkill -u agent \"$P\"", Auto, Host, ASK),
    // Ordinary work beside them.
    ("cmake -E remove_directory build", Auto, Host, AUTO),
    ("cmake -E rm -rf build", Auto, Host, AUTO),
    ("npx rimraf dist", Auto, Host, AUTO),
    ("trash build", Auto, Host, AUTO),
    ("gio trash ./dist", Auto, Host, AUTO),
    ("gio info ~", Auto, Host, AUTO),
    ("rsync -a --remove-source-files out/ /tmp/staging/", Auto, Host, AUTO),
    ("git clean -fdx", Auto, Host, AUTO),
    ("git clean -fdx build/", Auto, Container, AUTO),
    ("git -C ~ clean -ndx", Auto, Host, AUTO),
    ("git -C ~ status", Auto, Host, AUTO),
    ("chmod -R u+w .", Auto, Host, AUTO),
    ("chown -R $(id -u) build", Auto, Container, AUTO),
    ("find . -name '*.sh' -exec chmod +x {} \\;", Auto, Host, AUTO),
    ("install -m 755 build/x out/bin/x", Auto, Host, AUTO),
    ("chattr +i build/lock", Auto, Host, AUTO),
    ("pkill -u agent node", Auto, Host, AUTO),
    ("pkill -f 'node server.js'", Auto, Host, AUTO),
    ("killall node", Auto, Host, AUTO),
];

#[test]
fn destruction_by_meaning() {
    check(DESTRUCTION);
}

/// The home's hidden places whose contents run later (protected.rs);
/// the project's visible build files stay its work.
#[rustfmt::skip]
const HOME_CODE: &[Row] = &[
    ("printf x >> ~/.bash_aliases", Auto, Host, ASK),
    ("printf x >> ~/.pam_environment", Auto, Host, ASK),
    ("printf x > ~/.config/environment.d/x.conf", Auto, Host, ASK),
    ("printf 'import os' > ~/.local/lib/python3.11/site-packages/x.pth", Auto, Host, ASK),
    ("printf x > ~/.node_modules/x.js", Auto, Host, ASK),
    ("printf 'pinentry-program /tmp/x' >> ~/.gnupg/gpg-agent.conf", Auto, Host, ASK),
    ("printf x >> ~/.gradle/init.d/x.gradle", Auto, Host, ASK),
    ("printf x >> ~/.gradle/gradle.properties", Auto, Host, ASK),
    ("printf x >> ~/.cargo/env", Auto, Host, ASK),
    ("printf x >> ~/.terraformrc", Auto, Host, ASK),
    ("printf x >> .bazelrc", Auto, Container, ASK),
    ("printf x >> .devcontainer.json", Auto, Container, ASK),
    ("printf x >> .aider.conf.yml", Auto, Container, ASK),
    ("printf x >> .gemini/settings.json", Auto, Container, ASK),
    ("printf x >> .zed/tasks.json", Auto, Container, ASK),
    // Spellings a host's file system opens as the protected name (name_fold.rs).
    ("printf x > .git./hooks/pre-commit", Auto, Container, ASK),
    ("cp hook GIT~1/hooks/pre-commit", Auto, Container, ASK),
    ("tee .g\u{200c}it/config < x", Auto, Container, ASK),
    ("printf x >> '.envrc '", Auto, Host, ASK),
    ("printf x > src/notes~1.txt", Auto, Container, AUTO),
    ("git revert feature/login~5..feature/login~2", Auto, Container, AUTO),
    ("printf x >> gradle.properties", Auto, Container, AUTO),
    ("printf x >> jest.config.js", Auto, Container, AUTO),
    ("printf x >> .github/workflows/ci.yml", Auto, Container, AUTO),
    ("printf x >> ~/.local/share/notes.txt", Auto, Host, AUTO),
    ("rm -r ./*", Auto, Container, AUTO),
];

#[test]
fn home_code() {
    check(HOME_CODE);
}

#[test]
fn administering_the_machine() {
    check(ADMINISTERING);
}

#[test]
fn reading_the_machine() {
    check(READING_THE_MACHINE);
}

#[test]
fn system_places() {
    check(SYSTEM_PLACES);
}

#[test]
fn beneath_the_home() {
    check(BENEATH_THE_HOME);
}
