package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/quiverdata/quiver/client"
	"github.com/quiverdata/quiver/internal/readme"
	"github.com/quiverdata/quiver/internal/testutil"
)

// readmeMariaDBDump is a dump as MariaDB's mysqldump writes one, for the
// docs' restore into quiver.
const readmeMariaDBDump = "/*!40101 SET NAMES utf8mb4 */;\n" +
	"/*!40014 SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS, FOREIGN_KEY_CHECKS=0 */;\n" +
	"/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;\n" +
	"DROP TABLE IF EXISTS `pets`;\n" +
	"CREATE TABLE `pets` (\n" +
	"  `id` int(11) NOT NULL AUTO_INCREMENT,\n" +
	"  `name` varchar(40) DEFAULT NULL,\n" +
	"  PRIMARY KEY (`id`)\n" +
	") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci;\n" +
	"LOCK TABLES `pets` WRITE;\n" +
	"INSERT INTO `pets` VALUES (1,'Rex'),(2,'Tom\\'s cat');\n" +
	"UNLOCK TABLES;\n" +
	"/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;\n" +
	"/*!40014 SET FOREIGN_KEY_CHECKS=@OLD_FOREIGN_KEY_CHECKS */;\n"

// TestReadme_MySQLToolsAsWritten runs the docs' mysql and mysqldump
// commands for quiver's MySQL port exactly as written, in a scratch
// directory, each on a pseudo-terminal as a person runs them: -p asks for
// the password there, while a `<` or `>` redirects stdin or stdout to a
// file. The server listens on the port they name with the user they name.
// The interactive client must run a query, the dump must hold the table,
// and the restore of a MariaDB dump must create its rows. Commands for
// another host (a MariaDB of your own) are not run. The test is skipped
// when the clients are missing, as the MySQL protocol's own CLI tests are.
func TestReadme_MySQLToolsAsWritten(t *testing.T) {
	for _, bin := range []string{"mysql", "mysqldump"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (apt-get install mariadb-client); skipping", bin)
		}
	}
	cmds := readme.Commands(t, "mysql")
	const password = "docs-pw"
	t.Chdir(t.TempDir())
	srv, stop := startServe(t, "--db", ":memory:", "--flight", "127.0.0.1:0", "--mysql", "127.0.0.1:9030", "--http", "",
		"--user", "admin", "--password", password, "--log-level", "error")
	t.Cleanup(stop)
	c := testutil.Dial(t, srv, client.Config{User: "admin", Password: password})
	ctx := context.Background()
	if _, err := c.Exec(ctx, "CREATE TABLE orders AS SELECT i AS id, ['new', 'paid'][i % 2 + 1] AS status FROM range(100) t(i)"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("mariadb-dump.sql", []byte(readmeMariaDBDump), 0o644); err != nil {
		t.Fatal(err)
	}

	ran := map[string]bool{}
	for _, line := range cmds {
		words := readme.ShellWords(t, line)
		if !strings.Contains(" "+line+" ", " -h 127.0.0.1 -P 9030 -u admin -p ") {
			t.Logf("not run, for another server: %s", line)
			continue
		}
		t.Logf("docs: %s", line)
		var args []string
		var stdin, stdout string
		for i := 1; i < len(words); i++ {
			switch {
			case words[i] == "<" && i+1 < len(words):
				stdin = words[i+1]
				i++
			case words[i] == ">" && i+1 < len(words):
				stdout = words[i+1]
				i++
			default:
				args = append(args, words[i])
			}
		}
		p := startOnPTY(t, words[0], args, stdin, stdout)
		p.expect("password:")
		p.send(password, keyEnter)
		switch {
		case words[0] == "mysqldump":
			p.exit()
			b, err := os.ReadFile(stdout)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"CREATE TABLE `orders`", "INSERT INTO `orders`"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("%s: %s lacks %q", line, stdout, want)
				}
			}
			ran["dump"] = true
		case stdin != "":
			p.exit()
			if n, err := testutil.CountRows(ctx, c, "SELECT * FROM pets"); err != nil || n != 2 {
				t.Errorf("%s: pets has %d rows (%v), want 2", line, n, err)
			} else if got := scalar(t, c, "SELECT name FROM pets WHERE id = 2"); got != "Tom's cat" {
				t.Errorf("%s: pet 2 is %q, want the dump's backslash-escaped Tom's cat", line, got)
			}
			ran["restore"] = true
		default:
			p.expect("]> ")
			p.send("SELECT count(*) AS n FROM orders;", keyEnter)
			p.expect("100")
			p.expect("]> ")
			p.send("exit", keyEnter)
			p.exit()
			ran["interactive"] = true
		}
	}
	for _, want := range []string{"interactive", "dump", "restore"} {
		if !ran[want] {
			t.Errorf("the docs show no %s command for quiver's MySQL port", want)
		}
	}
}

// startOnPTY runs bin args with a new pseudo-terminal as its controlling
// terminal and stderr, and as its stdin and stdout unless they are
// redirected to the files named.
func startOnPTY(t *testing.T, bin string, args []string, stdin, stdout string) *ptyShell {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "TERM=dumb", "HOME="+t.TempDir())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	if stdout != "" {
		f, err := os.Create(stdout)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 2}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	tty.Close()
	return watchPTY(t, cmd, master, time.Second)
}
